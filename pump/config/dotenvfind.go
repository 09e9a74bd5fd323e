package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// FindDotEnv returns the .env that accompanies the configuration file at
// configPath: the nearest one walking up from the file's directory to the
// filesystem root, as python-dotenv's load_dotenv() finds the .env of the
// Python server (config/organism.yaml with .env at the repository root), or
// "" when there is none. Any entry named .env that is not a directory
// counts, so a .env that cannot be read is reported rather than skipped for
// one further up.
func FindDotEnv(configPath string) string {
	dir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		dir = filepath.Dir(configPath)
	}
	for {
		candidate := filepath.Join(dir, ".env")
		if fi, err := os.Stat(candidate); err == nil && !fi.IsDir() {
			return candidate
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return candidate
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// LoadDotEnvFor loads the .env that accompanies the configuration file at
// configPath (FindDotEnv) with LoadDotEnv; none is not an error.
func LoadDotEnvFor(configPath string) error {
	path := FindDotEnv(configPath)
	if path == "" {
		return nil
	}
	return LoadDotEnv(path)
}
