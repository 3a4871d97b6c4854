#ifndef MDQ_CSQLITE_SHIMS_H
#define MDQ_CSQLITE_SHIMS_H
// SQLite (public domain), the import store's engine; only
// MetadataIndex/System/ imports this module.
#include <sqlite3.h>

/// SQLITE_TRANSIENT does not import into Swift (a cast of -1 to a pointer).
static inline void (*mdq_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
#endif
