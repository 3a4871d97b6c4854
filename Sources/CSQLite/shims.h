#ifndef MDQ_CSQLITE_SHIMS_H
#define MDQ_CSQLITE_SHIMS_H
// SQLite (public domain), the import store's engine; only
// MetadataIndex/System/ imports this module.
#include <sqlite3.h>

/// SQLITE_TRANSIENT does not import into Swift (a cast of -1 to a pointer).
static inline void (*mdq_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

/* An FTS5 tokenizer of a connection, run outside any table: the import
 * store reads the words of its texts with the very tokenizer (and
 * arguments) its full-text index uses. */
typedef struct mdq_fts5_tokenizer {
    fts5_tokenizer methods;
    Fts5Tokenizer *instance;
} mdq_fts5_tokenizer;

/* The tokenizer `name` created with `arguments`; NULL when the connection
 * has no FTS5 or no such tokenizer. Free it with mdq_fts5_tokenizer_close. */
static inline mdq_fts5_tokenizer *mdq_fts5_tokenizer_open(
    sqlite3 *db, const char *name, const char **arguments, int count) {
    fts5_api *api = 0;
    sqlite3_stmt *statement = 0;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &statement, 0) != SQLITE_OK) return 0;
    sqlite3_bind_pointer(statement, 1, (void *)&api, "fts5_api_ptr", 0);
    sqlite3_step(statement);
    sqlite3_finalize(statement);
    if (api == 0 || api->iVersion < 2) return 0;
    void *context = 0;
    fts5_tokenizer methods;
    if (api->xFindTokenizer(api, name, &context, &methods) != SQLITE_OK) return 0;
    Fts5Tokenizer *instance = 0;
    if (methods.xCreate(context, arguments, count, &instance) != SQLITE_OK) return 0;
    mdq_fts5_tokenizer *tokenizer = sqlite3_malloc(sizeof *tokenizer);
    if (tokenizer == 0) {
        methods.xDelete(instance);
        return 0;
    }
    tokenizer->methods = methods;
    tokenizer->instance = instance;
    return tokenizer;
}

static inline void mdq_fts5_tokenizer_close(mdq_fts5_tokenizer *tokenizer) {
    if (tokenizer == 0) return;
    tokenizer->methods.xDelete(tokenizer->instance);
    sqlite3_free(tokenizer);
}

/* Calls `token` for each token of `text`, as a document being indexed is
 * split; a non-zero return from it stops the run and is returned. */
typedef int (*mdq_fts5_token_callback)(
    void *context, int flags, const char *token, int length, int start, int end);
static inline int mdq_fts5_tokenize(
    mdq_fts5_tokenizer *tokenizer, const char *text, int length, void *context, mdq_fts5_token_callback token) {
    return tokenizer->methods.xTokenize(
        tokenizer->instance, context, FTS5_TOKENIZE_DOCUMENT, text, length, token);
}
#endif
