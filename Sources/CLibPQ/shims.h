#ifndef MDQ_CLIBPQ_SHIMS_H
#define MDQ_CLIBPQ_SHIMS_H
// libpq (PostgreSQL licence; Debian's libpq-dev), PostgreSQL's own client
// library: the shared index across hosts. Only MDQShared imports this module.
#include <postgresql/libpq-fe.h>

/* Notices (an extension that already exists, a table dropped that was not
 * there) are not errors: mdq says what it did itself. */
static inline void mdq_pq_ignore_notice(void *argument, const char *message) {
    (void)argument;
    (void)message;
}

static inline void mdq_pq_silence_notices(PGconn *connection) {
    PQsetNoticeProcessor(connection, mdq_pq_ignore_notice, 0);
}
#endif
