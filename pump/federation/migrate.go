package federation

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// legacyStateFile is the federation state file of earlier versions, in the
// data directory; its rows are moved into the store once (migrateFile) and
// it is renamed legacyStateFile + migratedSuffix.
const legacyStateFile = "federation.db"

// migratedSuffix ends the name a migrated legacyStateFile is kept under.
const migratedSuffix = ".migrated"

// legacyTable is a table of legacyStateFile and where its rows go.
type legacyTable struct {
	from, to string
	// cols are the columns copied (those of them the file's table has).
	cols []string
	// order is the ORDER BY of the copy (the outbox keeps its order).
	order string
}

// legacyTables are the tables migrateFile copies.
var legacyTables = []legacyTable{
	{"outbox", "federation_outbox", []string{"seq", "gateway", "id", "env", "created"}, "seq"},
	{"seen", "federation_seen", []string{"hash", "at"}, "hash"},
	{"served", "federation_served", []string{"conv", "gateway", "link_thread", "created"}, "conv"},
	{"calls", "federation_calls", []string{"link_thread", "gateway", "caller_thread", "digest", "answer", "created"}, "created"},
	{"imports", "federation_imports", []string{"gateway", "tag", "name", "description", "xsd"}, "gateway, tag"},
	{"received", "federation_received", []string{"conv", "at", "done"}, "conv"},
}

// migrateFile moves the rows of the federation.db an earlier version left
// in st's directory into st's federation tables, in one transaction of
// st's writer, then renames the file (and its WAL files) to
// federation.db.migrated. The transaction records the migration
// (federation_migrated), so a crash before the rename leaves a file that
// the next start only renames. Every copy is INSERT OR IGNORE: rows the
// store has already are kept.
func migrateFile(st *store.Store, log *slog.Logger) error {
	path := filepath.Join(st.Dir(), legacyStateFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("federation: migrate %s: %w", path, err)
	}
	var done int
	if err := st.ReadDB().QueryRow(`SELECT count(*) FROM federation_migrated`).Scan(&done); err != nil {
		return fmt.Errorf("federation: migrate %s: %w", path, err)
	}
	if done == 0 {
		counts, err := copyLegacy(st, path, log)
		if err != nil {
			return fmt.Errorf("federation: migrate %s: %w", path, err)
		}
		log.Info("federation: state moved from "+legacyStateFile+" into the store", "rows", counts)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Rename(path+suffix, path+migratedSuffix+suffix)
		if err != nil && (suffix == "" || !errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("federation: migrated %s: rename: %w", path, err)
		}
	}
	return nil
}

// copyLegacy copies the rows of the state file at path into st in one
// transaction and returns how many rows each table had.
func copyLegacy(st *store.Store, path string, log *slog.Logger) (map[string]int, error) {
	if err := store.PrepareDatabaseFile(path, log); err != nil { // the owner's alone: 0600
		return nil, err
	}
	old, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer old.Close()
	old.SetMaxOpenConns(1)
	columns, err := legacyColumns(old)
	if err != nil {
		return nil, err
	}
	// A file made before its received table existed may have received
	// calls the table lacks: the calls sent before now are uncertain (the
	// journal decides), as they were for it.
	since := time.Now().UnixNano()
	if _, ok := columns["received_since"]; ok {
		if err := old.QueryRow(`SELECT coalesce(max(at), ?) FROM received_since`, since).Scan(&since); err != nil {
			return nil, fmt.Errorf("received_since: %w", err)
		}
	}
	counts := map[string]int{}
	err = st.Write(context.Background(), "federation: migrate "+legacyStateFile, func(tx *store.Tx) error {
		clear(counts)
		for _, t := range legacyTables {
			have := columns[t.from]
			var cols []string
			for _, c := range t.cols {
				if slices.Contains(have, c) {
					cols = append(cols, c)
				}
			}
			if len(cols) == 0 {
				continue // no such table in this file
			}
			n, err := copyRows(old, tx, t, cols)
			if err != nil {
				return fmt.Errorf("%s: %w", t.from, err)
			}
			counts[t.from] = n
		}
		if _, err := tx.Exec(`UPDATE federation_received_since SET at = max(at, ?)`, since); err != nil {
			return fmt.Errorf("received_since: %w", err)
		}
		if counts["seen"] > 0 {
			// Its hashes may be keyed by the hash alone (schema.go).
			if _, err := tx.Exec(`INSERT INTO federation_seen_legacy (at) SELECT 0
				WHERE NOT EXISTS (SELECT 1 FROM federation_seen_legacy)`); err != nil {
				return fmt.Errorf("seen: %w", err)
			}
		}
		_, err := tx.Exec(`INSERT INTO federation_migrated (at, file) VALUES (?, ?)`, time.Now().UnixNano(), path)
		return err
	})
	return counts, err
}

// legacyColumns lists the columns of each table of old.
func legacyColumns(old *sql.DB) (map[string][]string, error) {
	rows, err := old.Query(`SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p
		WHERE m.type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		out[table] = append(out[table], col)
	}
	return out, rows.Err()
}

// copyRows copies cols of t's rows from old into tx, in t's order.
func copyRows(old *sql.DB, tx *store.Tx, t legacyTable, cols []string) (int, error) {
	list := strings.Join(cols, ", ")
	rows, err := old.Query(`SELECT ` + list + ` FROM ` + t.from + ` ORDER BY ` + t.order)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	insert := `INSERT OR IGNORE INTO ` + t.to + ` (` + list + `) VALUES (?` + strings.Repeat(`, ?`, len(cols)-1) + `)`
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := tx.Exec(insert, vals...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}
