package store

import (
	"errors"

	sqlite "modernc.org/sqlite"
)

// errNoDBStatus reports a driver connection without sqlite3_db_status.
var errNoDBStatus = errors.New("store: the SQLite driver does not report connection status")

// pagesWritten returns how many pages the connection has written out of its
// page cache since it opened (SQLITE_DBSTATUS_CACHE_WRITE). In WAL mode a
// committed page is one WAL frame, so the difference across a commit is the
// frames that commit appended: a count the machine's load does not move.
func (c *writeConn) pagesWritten() (int64, error) {
	if c.conn == nil {
		return 0, errWriteConnClosed
	}
	var n int
	err := c.conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return errNoDBStatus
		}
		var err error
		n, _, err = st.Status(sqlite.DBStatusCacheWrite, false)
		return err
	})
	return int64(n), err
}
