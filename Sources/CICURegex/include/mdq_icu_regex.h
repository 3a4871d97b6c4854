#ifndef MDQ_ICU_REGEX_H
#define MDQ_ICU_REGEX_H
// ICU's regular expressions (Unicode licence; Debian's libicu-dev), the
// engine NSPredicate's MATCHES is defined by, behind an interface of plain C
// types: ICU's own headers would clash with the copy Foundation carries.
#include <stdint.h>

/// A compiled expression (ICU's URegularExpression).
typedef struct mdq_regex mdq_regex;

/// Compiles `pattern` (UTF-16), case-insensitive when `ignore_case` is set.
/// NULL on failure, with `*error` a short reason's code (below) and
/// `*offset` where in the pattern (UTF-16 units; -1 when ICU does not say).
mdq_regex *mdq_regex_compile(const uint16_t *pattern, int32_t length, int ignore_case, int32_t *error,
                             int32_t *offset);

/// A copy for another thread's matching (NULL when out of memory).
mdq_regex *mdq_regex_clone(const mdq_regex *regex);

void mdq_regex_free(mdq_regex *regex);

/// Called about every 10,000 steps of a match; returning 0 stops it.
typedef int (*mdq_regex_progress)(void *context);

/// Whether the whole of `text` matches: 1 yes, 0 no, -1 stopped by
/// `progress` (or failed). `text` is not kept after the call.
int mdq_regex_matches(mdq_regex *regex, const uint16_t *text, int32_t length, mdq_regex_progress progress,
                      void *context);

/// Compile errors, as `mdq_regex_compile` reports them.
enum {
    MDQ_REGEX_SYNTAX = 1,
    MDQ_REGEX_MISSING_BRACKET,
    MDQ_REGEX_MISMATCHED_PAREN,
    MDQ_REGEX_BAD_ESCAPE,
    MDQ_REGEX_BAD_INTERVAL,
    MDQ_REGEX_BAD_RANGE,
    MDQ_REGEX_BAD_PROPERTY,
    MDQ_REGEX_LOOK_BEHIND,
    MDQ_REGEX_TOO_BIG,
    MDQ_REGEX_OTHER,
};
#endif
