#include "mdq_icu_regex.h"
#include <unicode/uregex.h>

struct mdq_regex;  // is a URegularExpression

struct callback_context {
    mdq_regex_progress progress;
    void *context;
};

static UBool on_progress(const void *context, int32_t steps) {
    (void)steps;
    const struct callback_context *callback = context;
    return callback->progress(callback->context) ? 1 : 0;
}

static int32_t describe(UErrorCode status) {
    switch (status) {
    case U_REGEX_RULE_SYNTAX: return MDQ_REGEX_SYNTAX;
    case U_REGEX_MISSING_CLOSE_BRACKET: return MDQ_REGEX_MISSING_BRACKET;
    case U_REGEX_MISMATCHED_PAREN: return MDQ_REGEX_MISMATCHED_PAREN;
    case U_REGEX_BAD_ESCAPE_SEQUENCE: return MDQ_REGEX_BAD_ESCAPE;
    case U_REGEX_BAD_INTERVAL:
    case U_REGEX_MAX_LT_MIN: return MDQ_REGEX_BAD_INTERVAL;
    case U_REGEX_INVALID_RANGE: return MDQ_REGEX_BAD_RANGE;
    case U_REGEX_PROPERTY_SYNTAX: return MDQ_REGEX_BAD_PROPERTY;
    case U_REGEX_LOOK_BEHIND_LIMIT: return MDQ_REGEX_LOOK_BEHIND;
    case U_REGEX_PATTERN_TOO_BIG: return MDQ_REGEX_TOO_BIG;
    default: return MDQ_REGEX_OTHER;
    }
}

mdq_regex *mdq_regex_compile(const uint16_t *pattern, int32_t length, int ignore_case, int32_t *error,
                             int32_t *offset) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse = {0};
    parse.offset = -1;
    URegularExpression *regex =
        uregex_open((const UChar *)pattern, length, ignore_case ? UREGEX_CASE_INSENSITIVE : 0, &parse, &status);
    *error = 0;
    *offset = -1;
    if (regex == NULL || U_FAILURE(status)) {
        if (regex) uregex_close(regex);
        *error = describe(status);
        *offset = parse.offset;
        return NULL;
    }
    return (mdq_regex *)regex;
}

mdq_regex *mdq_regex_clone(const mdq_regex *regex) {
    UErrorCode status = U_ZERO_ERROR;
    URegularExpression *copy = uregex_clone((const URegularExpression *)regex, &status);
    if (copy && U_FAILURE(status)) {
        uregex_close(copy);
        return NULL;
    }
    return (mdq_regex *)copy;
}

void mdq_regex_free(mdq_regex *regex) {
    if (regex) uregex_close((URegularExpression *)regex);
}

int mdq_regex_matches(mdq_regex *handle, const uint16_t *text, int32_t length, mdq_regex_progress progress,
                      void *context) {
    URegularExpression *regex = (URegularExpression *)handle;
    static const UChar empty[1] = {0};
    struct callback_context callback = {progress, context};
    UErrorCode status = U_ZERO_ERROR;
    if (progress) uregex_setMatchCallback(regex, on_progress, &callback, &status);
    uregex_setText(regex, length > 0 ? (const UChar *)text : empty, length, &status);
    UBool matched = U_SUCCESS(status) ? uregex_matches(regex, 0, &status) : 0;
    int result = U_FAILURE(status) ? -1 : (matched ? 1 : 0);
    // The copy keeps no pointer to the caller's text or context.
    UErrorCode reset = U_ZERO_ERROR;
    uregex_setText(regex, empty, 0, &reset);
    if (progress) uregex_setMatchCallback(regex, NULL, NULL, &reset);
    return result;
}
