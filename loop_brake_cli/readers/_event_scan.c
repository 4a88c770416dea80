/* loop_brake_cli.readers._event_scan: the common event line, read, canonicalised and hashed in C.
 *
 * Optional (setup.py builds it when a C compiler is there; fastpath.py works without
 * it). scan_event(line) returns, for an event line of the common shape,
 *
 *     (tool, session, call_id, digest, hash_prefix, session_json, call_json)
 *
 * and None for anything it cannot prove: the caller then takes the orjson path,
 * which decides (and reports errors) as before. What it proves when it answers:
 *
 * - the line is one valid JSON object (RFC 8259: strict UTF-8, no raw control
 *   characters in strings, the number grammar, nothing after the object but
 *   whitespace), nested at most MAX_DEPTH deep;
 * - its members "tool", "sessionId" and "callId" are strings without escapes,
 *   "args" is present and not null, each at most once, and it has no "agentId"
 *   or "agent_id" member and no member name with an escape (which could spell
 *   one of these names); every other member is any JSON value (it is dropped, so
 *   only the grammar matters: see any_value), nested at most MAX_DEPTH deep;
 * - digest is sha256(tool + "\n" + canonical_json(args)), canonical_json being
 *   the core's (canonical.py), because args stays inside a subset where the
 *   canonical form is the input with whitespace removed, object members sorted
 *   and string escapes written as JSON.stringify writes them: names of printable
 *   ASCII without escapes (byte order is then UTF-16 order), no duplicate names,
 *   strings with any escape but a lone surrogate (\" \\ \b \f \n \r \t kept,
 *   \/ and \u rewritten: see unicode_escape), numbers that JavaScript prints
 *   exactly as written (see number());
 * - session_json and call_json are the strings' JSON as json.encoder's
 *   encode_basestring writes them: with no escape and no control character
 *   inside, that is the text between and including the quotes.
 *
 * Everything is read from the line's bytes; no Python object is made until the
 * answer. Buffers are module globals grown as needed (the GIL is held throughout),
 * and given back after a line of more than a MiB.
 */
#define PY_SSIZE_T_CLEAN
/* The stable ABI of Python 3.10 (setup.py builds one abi3 wheel for every Python). */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_DIGITS 15 /* JavaScript prints up to 15 significant digits as written */

#include "_sha256.h"
#include "_session_slots.h"

/* ---- buffers ------------------------------------------------------------------ */

/* A member of an object being canonicalised: its name in the input, and where its
 * canonical '"name":value' text lies in the output buffer. */
typedef struct {
    const unsigned char *name;
    size_t name_size;
    size_t start; /* offset in out */
    size_t size;
} Member;

static unsigned char *out_buf, *tmp_buf; /* canonical text; an object's members while sorted */
static size_t buf_size;
static Member *members; /* a stack: each open object's members, innermost last */
static size_t members_size;

/* Room for a line of ``size`` bytes: the canonical form is never longer than its
 * input (whitespace goes, everything else is copied or reordered). */
static int reserve(size_t size)
{
    if (size <= buf_size)
        return 0;
    unsigned char *out = PyMem_Realloc(out_buf, size);
    if (out == NULL)
        return -1;
    out_buf = out;
    unsigned char *tmp = PyMem_Realloc(tmp_buf, size);
    if (tmp == NULL)
        return -1;
    tmp_buf = tmp;
    buf_size = size;
    return 0;
}

/* After a line of more than RETAINED bytes, give its buffers back: the next lines
 * are likely short, and a long one should not pin twice its size for the run. */
#define RETAINED ((size_t)1 << 20)

static void release_large(void)
{
    if (buf_size > RETAINED) {
        PyMem_Free(out_buf);
        PyMem_Free(tmp_buf);
        out_buf = tmp_buf = NULL;
        buf_size = 0;
    }
    if (members_size * sizeof(Member) > RETAINED) {
        PyMem_Free(members);
        members = NULL;
        members_size = 0;
    }
}

static int push_member(size_t index)
{
    if (index < members_size)
        return 0;
    size_t size = members_size ? members_size * 2 : 64;
    Member *grown = PyMem_Realloc(members, size * sizeof(Member));
    if (grown == NULL)
        return -1;
    members = grown;
    members_size = size;
    return 0;
}

/* ---- the reader ----------------------------------------------------------------- */

/* Outcomes: OK, NO (outside the subset or not valid JSON: the caller answers None),
 * FAIL (out of memory: a Python exception is set). */
enum { OK = 0, NO = 1, FAIL = -1 };

typedef struct {
    const unsigned char *p, *end;
    size_t out; /* write offset in out_buf */
    size_t depth;
    size_t open_members; /* members on the stack (all open objects) */
} Reader;

static inline void skip_space(Reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* Length of the strict UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid. */
static size_t utf8_size(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t size;
    unsigned char low = 0x80, high = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF)
        size = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        size = 3;
        if (c == 0xE0)
            low = 0xA0; /* no overlong form */
        else if (c == 0xED)
            high = 0x9F; /* no surrogate */
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        size = 4;
        if (c == 0xF0)
            low = 0x90;
        else if (c == 0xF4)
            high = 0x8F; /* nothing past U+10FFFF */
    }
    else
        return 0;
    if ((size_t)(end - p) < size || p[1] < low || p[1] > high)
        return 0;
    for (size_t i = 2; i < size; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    }
    return size;
}

static const char HEX_DIGITS[] = "0123456789abcdef";

static inline int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code unit of the \uXXXX at p (p[0] is the backslash), or -1. */
static long unicode_unit(const unsigned char *p, const unsigned char *end)
{
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
        return -1;
    long unit = 0;
    for (int i = 2; i < 6; i++) {
        int digit = hex_value(p[i]);
        if (digit < 0)
            return -1;
        unit = unit * 16 + digit;
    }
    return unit;
}

/* A \uXXXX escape at r->p (with its low surrogate, for a high one) written as
 * JSON.stringify writes the character: \" \\ and the short escapes, other controls
 * as lowercase \u00xx, everything else as UTF-8. Never longer than its input. A lone
 * surrogate is declined: the exact path writes it. */
static int unicode_escape(Reader *r)
{
    long unit = unicode_unit(r->p, r->end);
    if (unit < 0)
        return NO;
    r->p += 6;
    unsigned char *out = out_buf + r->out;
    if (unit >= 0xD800 && unit <= 0xDFFF) {
        long low = unit <= 0xDBFF ? unicode_unit(r->p, r->end) : -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return NO;
        r->p += 6;
        unsigned long cp = 0x10000 + (((unsigned long)unit - 0xD800) << 10) + (low - 0xDC00);
        out[0] = (unsigned char)(0xF0 | (cp >> 18));
        out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (cp & 0x3F));
        r->out += 4;
        return OK;
    }
    static const char SHORT[32] = {
        0, 0, 0, 0, 0, 0, 0, 0, 'b', 't', 'n', 0, 'f', 'r', 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0,   0,   0,   0, 0,   0,   0, 0,
    };
    if (unit < 0x20) {
        out[0] = '\\';
        if (SHORT[unit]) {
            out[1] = (unsigned char)SHORT[unit];
            r->out += 2;
        }
        else {
            memcpy(out + 1, "u00", 3);
            out[4] = (unsigned char)HEX_DIGITS[unit >> 4];
            out[5] = (unsigned char)HEX_DIGITS[unit & 15];
            r->out += 6;
        }
    }
    else if (unit == '"' || unit == '\\') {
        out[0] = '\\';
        out[1] = (unsigned char)unit;
        r->out += 2;
    }
    else if (unit < 0x80) {
        out[0] = (unsigned char)unit;
        r->out += 1;
    }
    else if (unit < 0x800) {
        out[0] = (unsigned char)(0xC0 | (unit >> 6));
        out[1] = (unsigned char)(0x80 | (unit & 0x3F));
        r->out += 2;
    }
    else {
        out[0] = (unsigned char)(0xE0 | (unit >> 12));
        out[1] = (unsigned char)(0x80 | ((unit >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (unit & 0x3F));
        r->out += 3;
    }
    return OK;
}

/* The first byte from p on that is not printable ASCII other than '"' and '\\' (end
 * at most): what string and any_string would step over one by one, eight at a time.
 * The tests (haszero for each of '"' and '\\', hasless for n = 0x20 <= 128, and the
 * high bits) never miss such a byte in a word, and their lowest flag is exact (a
 * borrow only carries upwards from a byte that is one), so on a little-endian
 * machine the count of trailing zero bits finds it; elsewhere the word's first byte
 * is where the byte-by-byte reading takes over. */
static inline const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t word, quote, slash, flags;
        memcpy(&word, p, 8);
        quote = word ^ (ones * '"');
        slash = word ^ (ones * '\\');
        flags = ((word - ones * 0x20) & ~word & highs) | ((quote - ones) & ~quote & highs) |
                ((slash - ones) & ~slash & highs) | (word & highs);
        if (flags) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            p += __builtin_ctzll(flags) >> 3;
#endif
            break;
        }
        p += 8;
    }
    return p;
}

/* A string at r->p (on its opening quote), written to the output as JSON.stringify
 * writes it. ``plain``: no escape at all (names and the event's id strings);
 * ``ascii``: printable ASCII only (object member names, so that byte order is UTF-16
 * order). The escapes JSON.stringify writes itself are kept as they are; \/ and \u
 * are rewritten (unicode_escape), so the output never outgrows the input. */
static int string(Reader *r, int plain, int ascii)
{
    const unsigned char *copied = r->p++; /* the input before it is in out_buf already */
    while (r->p < r->end) {
        r->p = plain_run(r->p, r->end);
        if (r->p >= r->end)
            break;
        unsigned char c = *r->p;
        if (c == '"') {
            r->p++;
            size_t size = (size_t)(r->p - copied);
            memcpy(out_buf + r->out, copied, size);
            r->out += size;
            return OK;
        }
        if (c == '\\') {
            if (plain || r->p + 1 >= r->end)
                return NO;
            switch (r->p[1]) {
            case '"':
            case '\\':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                r->p += 2;
                continue;
            case '/':
            case 'u': {
                size_t size = (size_t)(r->p - copied);
                memcpy(out_buf + r->out, copied, size);
                r->out += size;
                if (r->p[1] == '/') {
                    out_buf[r->out++] = '/';
                    r->p += 2;
                }
                else if (unicode_escape(r) != OK)
                    return NO;
                copied = r->p;
                continue;
            }
            default:
                return NO;
            }
        }
        if (c < 0x20)
            return NO; /* a raw control character: not JSON */
        if (c < 0x80) {
            r->p++;
            continue;
        }
        size_t size = ascii ? 0 : utf8_size(r->p, r->end);
        if (size == 0)
            return NO;
        r->p += size;
    }
    return NO; /* unterminated */
}

static inline int is_digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* A number that JavaScript prints exactly as written: an integer of at most 15
 * digits other than -0, or a decimal fraction without exponent whose last digit is
 * not 0, with at most 15 significant digits and at least 1e-6 in magnitude (at most
 * five zeros after the point before the first significant digit). Up to 15 digits
 * survive the trip through a double, and the shortest form of that double has no
 * fewer digits (a shorter one would be the same number with trailing zeros), so
 * Number.prototype.toString, and canonical.js_number, give back the input. */
static int number(Reader *r)
{
    const unsigned char *start = r->p, *end = r->end;
    const unsigned char *p = start;
    if (*p == '-')
        p++;
    if (!is_digit(p, end))
        return NO;
    size_t int_digits = 0;
    int zero = *p == '0';
    if (zero)
        p++;
    else {
        while (is_digit(p, end)) {
            p++;
            int_digits++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (!is_digit(p, end))
            return NO;
        size_t leading = 0, digits = 0;
        const unsigned char *first = p;
        while (is_digit(p, end))
            p++;
        digits = (size_t)(p - first);
        if (p[-1] == '0')
            return NO; /* JavaScript drops trailing zeros (and prints 1.0 as 1) */
        if (zero) {
            while (first[leading] == '0')
                leading++;
            if (leading > 5)
                return NO; /* below 1e-6: exponent form */
        }
        if (int_digits + digits - leading > MAX_DIGITS)
            return NO;
    }
    else if (zero && *start == '-')
        return NO; /* -0 prints as 0 */
    else if (int_digits > MAX_DIGITS)
        return NO;
    if (p < end && (*p == 'e' || *p == 'E' || *p == '.' || (*p >= '0' && *p <= '9')))
        return NO; /* an exponent, or 0 followed by digits: not this subset, or not JSON */
    size_t size = (size_t)(p - start);
    memcpy(out_buf + r->out, start, size);
    r->out += size;
    r->p = p;
    return OK;
}

static int literal(Reader *r, const char *word, size_t size)
{
    if ((size_t)(r->end - r->p) < size || memcmp(r->p, word, size) != 0)
        return NO;
    memcpy(out_buf + r->out, word, size);
    r->out += size;
    r->p += size;
    return OK;
}

static int value(Reader *r);

/* What follows a member or an element: NEXT (a comma, skipped with the space after
 * it), CLOSED (``close``, skipped), or NO. One rule for objects, arrays and the line. */
enum { NEXT = 2, CLOSED = 3 };

static int separator(Reader *r, unsigned char close)
{
    skip_space(r);
    if (r->p >= r->end)
        return NO;
    if (*r->p == ',') {
        r->p++;
        skip_space(r);
        return NEXT;
    }
    if (*r->p != close)
        return NO;
    r->p++;
    return CLOSED;
}

static int compare_members(const void *left, const void *right)
{
    const Member *a = left, *b = right;
    size_t size = a->name_size < b->name_size ? a->name_size : b->name_size;
    int order = memcmp(a->name, b->name, size);
    if (order)
        return order;
    return (a->name_size > b->name_size) - (a->name_size < b->name_size);
}

/* An object, its members written sorted by name, separated by commas. */
static int object(Reader *r)
{
    r->p++; /* '{' */
    out_buf[r->out++] = '{';
    size_t base = r->open_members, count = 0;
    size_t region = r->out; /* the members, written back to back, then sorted */
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        out_buf[r->out++] = '}';
        return OK;
    }
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            return NO;
        if (push_member(base + count) < 0)
            return FAIL;
        Member *member = &members[base + count];
        member->name = r->p + 1;
        member->start = r->out;
        if (string(r, 1, 1) != OK)
            return NO;
        member->name_size = (size_t)(r->p - member->name) - 1;
        count++;
        r->open_members = base + count;
        skip_space(r);
        if (r->p >= r->end || *r->p != ':')
            return NO;
        r->p++;
        out_buf[r->out++] = ':';
        skip_space(r);
        int got = value(r);
        if (got != OK)
            return got;
        member = &members[base + count - 1]; /* the stack may have moved */
        member->size = r->out - member->start;
        got = separator(r, '}');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    Member *own = &members[base];
    if (count > 1) {
        qsort(own, count, sizeof(Member), compare_members);
        for (size_t i = 1; i < count; i++) {
            if (compare_members(&own[i - 1], &own[i]) == 0)
                return NO; /* a duplicate name: JSON.parse keeps the last, not worth it */
        }
        size_t size = r->out - region;
        memcpy(tmp_buf, out_buf + region, size);
        r->out = region;
        for (size_t i = 0; i < count; i++) {
            if (i)
                out_buf[r->out++] = ',';
            memcpy(out_buf + r->out, tmp_buf + (own[i].start - region), own[i].size);
            r->out += own[i].size;
        }
    }
    out_buf[r->out++] = '}';
    r->open_members = base;
    return OK;
}

static int array(Reader *r)
{
    r->p++; /* '[' */
    out_buf[r->out++] = '[';
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        out_buf[r->out++] = ']';
        return OK;
    }
    for (;;) {
        int got = value(r);
        if (got != OK)
            return got;
        got = separator(r, ']');
        if (got == CLOSED) {
            out_buf[r->out++] = ']';
            return OK;
        }
        if (got != NEXT)
            return NO;
        out_buf[r->out++] = ',';
    }
}

static int value(Reader *r)
{
    if (r->p >= r->end)
        return NO;
    int got;
    switch (*r->p) {
    case '{':
    case '[':
        if (++r->depth > MAX_DEPTH)
            return NO;
        got = *r->p == '{' ? object(r) : array(r);
        r->depth--;
        return got;
    case '"':
        return string(r, 0, 0);
    case 't':
        return literal(r, "true", 4);
    case 'f':
        return literal(r, "false", 5);
    case 'n':
        return literal(r, "null", 4);
    default:
        return number(r);
    }
}

/* ---- any JSON, validated only (members the event line drops) --------------------- *
 * A dropped member's value needs only to be JSON as canonical.parse_json reads it
 * (Python's json module: any escape it knows, \u with four hex digits, lone
 * surrogates included; any number of the grammar, whatever its size; duplicate
 * names), since nothing of it reaches a verdict. Nothing is written to out_buf. */

static int any_value(Reader *r);

static inline int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int any_string(Reader *r)
{
    r->p++; /* '"' */
    while (r->p < r->end) {
        r->p = plain_run(r->p, r->end);
        if (r->p >= r->end)
            break;
        unsigned char c = *r->p;
        if (c == '"') {
            r->p++;
            return OK;
        }
        if (c == '\\') {
            if (r->end - r->p < 2)
                return NO;
            switch (r->p[1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                r->p += 2;
                continue;
            case 'u':
                if (r->end - r->p < 6 || !is_hex(r->p[2]) || !is_hex(r->p[3]) ||
                    !is_hex(r->p[4]) || !is_hex(r->p[5]))
                    return NO;
                r->p += 6;
                continue;
            default:
                return NO;
            }
        }
        if (c < 0x20)
            return NO;
        if (c < 0x80) {
            r->p++;
            continue;
        }
        size_t size = utf8_size(r->p, r->end);
        if (size == 0)
            return NO;
        r->p += size;
    }
    return NO;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)? */
static int any_number(Reader *r)
{
    const unsigned char *p = r->p, *end = r->end;
    if (*p == '-')
        p++;
    if (!is_digit(p, end))
        return NO;
    if (*p == '0')
        p++;
    else
        while (is_digit(p, end))
            p++;
    if (p < end && *p == '.') {
        p++;
        if (!is_digit(p, end))
            return NO;
        while (is_digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, end))
            return NO;
        while (is_digit(p, end))
            p++;
    }
    r->p = p;
    return OK;
}

static int any_container(Reader *r, unsigned char close)
{
    r->p++; /* '{' or '[' */
    skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return OK;
    }
    for (;;) {
        if (close == '}') {
            if (r->p >= r->end || *r->p != '"' || any_string(r) != OK)
                return NO;
            skip_space(r);
            if (r->p >= r->end || *r->p != ':')
                return NO;
            r->p++;
            skip_space(r);
        }
        if (any_value(r) != OK)
            return NO;
        int got = separator(r, close);
        if (got == CLOSED)
            return OK;
        if (got != NEXT)
            return NO;
    }
}

static int any_value(Reader *r)
{
    if (r->p >= r->end)
        return NO;
    int got;
    switch (*r->p) {
    case '{':
    case '[':
        if (++r->depth > MAX_DEPTH)
            return NO; /* the caller's own path reads it (and says when too deep) */
        got = any_container(r, *r->p == '{' ? '}' : ']');
        r->depth--;
        return got;
    case '"':
        return any_string(r);
    case 't':
    case 'f':
    case 'n': {
        const char *word = *r->p == 't' ? "true" : *r->p == 'f' ? "false" : "null";
        size_t size = strlen(word);
        if ((size_t)(r->end - r->p) < size || memcmp(r->p, word, size) != 0)
            return NO;
        r->p += size;
        return OK;
    }
    default:
        return any_number(r);
    }
}

/* ---- the event line ------------------------------------------------------------- */

typedef struct {
    const unsigned char *start; /* the opening quote */
    size_t size;                /* quotes included */
} Span;

static int name_is(const unsigned char *name, size_t size, const char *word)
{
    return size == strlen(word) && memcmp(name, word, size) == 0;
}

/* An id string (tool, session, call id): no escape, so its JSON is its text. */
static int id_string(Reader *r, Span *span)
{
    if (span->start != NULL || r->p >= r->end || *r->p != '"')
        return NO; /* a second one, or not a string */
    span->start = r->p;
    size_t mark = r->out;
    int got = string(r, 1, 0);
    r->out = mark; /* only validated here */
    span->size = (size_t)(r->p - span->start);
    return got;
}

static int event(Reader *r, Span *tool, Span *session, Span *call, size_t *args_end)
{
    int seen_args = 0;
    skip_space(r);
    if (r->p >= r->end || *r->p != '{')
        return NO;
    r->p++;
    r->depth = 1;
    skip_space(r);
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            return NO; /* also the empty object: no tool */
        const unsigned char *name = r->p + 1;
        size_t mark = r->out;
        if (string(r, 1, 0) != OK)
            return NO; /* an escaped name could spell "tool" */
        size_t name_size = (size_t)(r->p - name) - 1;
        r->out = mark;
        skip_space(r);
        if (r->p >= r->end || *r->p != ':')
            return NO;
        r->p++;
        skip_space(r);
        int got;
        if (name_is(name, name_size, "tool"))
            got = id_string(r, tool);
        else if (name_is(name, name_size, "sessionId"))
            got = id_string(r, session);
        else if (name_is(name, name_size, "callId"))
            got = id_string(r, call);
        else if (name_is(name, name_size, "args")) {
            if (seen_args || (r->p < r->end && *r->p == 'n'))
                return NO; /* a second args, or null (the decoder's {}) */
            seen_args = 1;
            got = value(r); /* at offset 0: every member before it was read and dropped */
            *args_end = r->out;
        }
        else if (name_is(name, name_size, "agentId") || name_is(name, name_size, "agent_id"))
            return NO;
        else
            got = any_value(r); /* validated as any JSON, then dropped */
        if (got != OK)
            return got;
        got = separator(r, '}');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    skip_space(r);
    if (r->p != r->end)
        return NO; /* something after the object */
    if (!seen_args || tool->start == NULL || session->start == NULL || call->start == NULL)
        return NO;
    return OK;
}

/* sha256(head + suffix + the canonical text read into out_buf), the end of a read. */
static void read_digest(const unsigned char *head, size_t head_size, const char *suffix,
                        size_t canonical_size, unsigned char *digest)
{
    Sha256 sha;
    sha_init(&sha);
    sha_update(&sha, head, head_size);
    sha_update(&sha, (const unsigned char *)suffix, strlen(suffix));
    sha_update(&sha, out_buf, canonical_size);
    sha_final(&sha, digest);
    release_large();
}

/* The answer to a read that did not end OK: None, or MemoryError for FAIL. */
static PyObject *declined(int got)
{
    release_large();
    if (got == FAIL)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *id_text(const Span *span)
{
    return PyUnicode_DecodeUTF8((const char *)span->start + 1, (Py_ssize_t)span->size - 2,
                                "strict");
}

static PyObject *scan_event(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "scan_event() takes bytes");
        return NULL;
    }
    const unsigned char *line = (const unsigned char *)PyBytes_AsString(arg);
    size_t size = (size_t)PyBytes_Size(arg);
    if (reserve(size + 1) < 0)
        return PyErr_NoMemory();
    Reader r = {line, line + size, 0, 0, 0};
    Span tool = {NULL, 0}, session = {NULL, 0}, call = {NULL, 0};
    size_t args_end = 0;
    int got = event(&r, &tool, &session, &call, &args_end);
    if (got != OK)
        return declined(got);
    unsigned char digest[32], prefix[12];
    read_digest(tool.start + 1, tool.size - 2, "\n", args_end, digest); /* args is at 0 */
    for (int i = 0; i < 6; i++) {
        prefix[2 * i] = (unsigned char)HEX_DIGITS[digest[i] >> 4];
        prefix[2 * i + 1] = (unsigned char)HEX_DIGITS[digest[i] & 15];
    }
    PyObject *items[7] = {
        id_text(&tool),
        id_text(&session),
        id_text(&call),
        PyBytes_FromStringAndSize((const char *)digest, 32),
        PyBytes_FromStringAndSize((const char *)prefix, 12),
        PyBytes_FromStringAndSize((const char *)session.start, (Py_ssize_t)session.size),
        PyBytes_FromStringAndSize((const char *)call.start, (Py_ssize_t)call.size),
    };
    PyObject *result = PyTuple_New(7);
    for (int i = 0; i < 7; i++) {
        if (items[i] == NULL || result == NULL) {
            for (int j = 0; j < 7; j++)
                Py_XDECREF(items[j]);
            Py_XDECREF(result);
            return NULL;
        }
    }
    for (int i = 0; i < 7; i++)
        PyTuple_SetItem(result, i, items[i]); /* steals; cannot fail on a new tuple */
    return result;
}

static PyObject *sha256_digest(PyObject *module, PyObject *arg)
{
    /* bytes(arg): the buffer protocol is not in the 3.10 stable ABI; tests only */
    PyObject *data = PyBytes_FromObject(arg);
    if (data == NULL)
        return NULL;
    Sha256 sha;
    unsigned char digest[32];
    sha_init(&sha);
    sha_update(&sha, (const unsigned char *)PyBytes_AsString(data), (size_t)PyBytes_Size(data));
    sha_final(&sha, digest);
    Py_DECREF(data);
    return PyBytes_FromStringAndSize((const char *)digest, 32);
}

/* digest_json(head, data): sha256(head + the canonical form of the one JSON value in
 * data), by the same reader and subset as scan_event's arguments; None outside it.
 * For callers that hold a parsed value (replay's judge): orjson's plain dump of it is
 * read here, which spares the sorted dump, the looks and hashlib's three calls. */
static PyObject *digest_json(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "digest_json() takes two bytes: head, data");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AsString(args[1]);
    size_t size = (size_t)PyBytes_Size(args[1]);
    if (reserve(size + 1) < 0)
        return PyErr_NoMemory();
    Reader r = {data, data + size, 0, 0, 0};
    skip_space(&r);
    int got = value(&r);
    skip_space(&r);
    if (got != OK || r.p != r.end)
        return declined(got == OK ? NO : got);
    unsigned char digest[32];
    read_digest((const unsigned char *)PyBytes_AsString(args[0]), (size_t)PyBytes_Size(args[0]),
                "", r.out, digest);
    return PyBytes_FromStringAndSize((const char *)digest, 32);
}

#include "_claude_scan.h"

/* policy_digest(line, head, names): for an event line scan_event answers, the digest
 * of its call hashed without the top-level argument members named in names (a tuple
 * of bytes: a policy's args_ignore when every path is $.name, Policy.args_digest):
 * sha256(head + the canonical arguments with those members left out), read from the
 * canonical text scan_event hashes (sorted, so leaving members out keeps it sorted);
 * arguments that are not an object lose nothing. None for a line scan_event declines. */
static PyObject *policy_digest(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1]) ||
        !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "policy_digest() takes line, head and a tuple of names");
        return NULL;
    }
    Py_ssize_t count = PyTuple_Size(args[2]);
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!PyBytes_Check(PyTuple_GetItem(args[2], i))) {
            PyErr_SetString(PyExc_TypeError, "policy_digest(): each name is bytes");
            return NULL;
        }
    }
    const unsigned char *line = (const unsigned char *)PyBytes_AsString(args[0]);
    size_t size = (size_t)PyBytes_Size(args[0]);
    if (reserve(size + 1) < 0)
        return PyErr_NoMemory();
    Reader r = {line, line + size, 0, 0, 0};
    Span tool = {NULL, 0}, session = {NULL, 0}, call = {NULL, 0};
    size_t args_end = 0;
    int got = event(&r, &tool, &session, &call, &args_end);
    if (got != OK)
        return declined(got);
    Sha256 sha;
    sha_init(&sha);
    sha_update(&sha, (const unsigned char *)PyBytes_AsString(args[1]),
               (size_t)PyBytes_Size(args[1]));
    if (args_end < 2 || out_buf[0] != '{') { /* not an object: nothing to leave out */
        sha_update(&sha, out_buf, args_end);
    }
    else {
        size_t at = 1; /* a member's opening quote (names hold no quote: no escapes) */
        int first = 1;
        sha_update(&sha, (const unsigned char *)"{", 1);
        while (at < args_end && out_buf[at] == '"') {
            size_t name = at + 1, close = name;
            while (close < args_end && out_buf[close] != '"')
                close++;
            if (close + 2 >= args_end || out_buf[close + 1] != ':')
                return declined(NO); /* cannot happen: the text is canonical JSON */
            Reader member = {out_buf + close + 2, out_buf + args_end, 0, 1, 0};
            if (any_value(&member) != OK)
                return declined(NO); /* cannot happen, as above */
            size_t end = (size_t)(member.p - out_buf);
            int left_out = 0;
            for (Py_ssize_t i = 0; i < count && !left_out; i++) {
                PyObject *word = PyTuple_GetItem(args[2], i);
                left_out = (size_t)PyBytes_Size(word) == close - name &&
                           memcmp(PyBytes_AsString(word), out_buf + name, close - name) == 0;
            }
            if (!left_out) {
                if (!first)
                    sha_update(&sha, (const unsigned char *)",", 1);
                sha_update(&sha, out_buf + at, end - at);
                first = 0;
            }
            at = end < args_end && out_buf[end] == ',' ? end + 1 : end;
        }
        sha_update(&sha, (const unsigned char *)"}", 1);
    }
    unsigned char digest[32];
    sha_final(&sha, digest);
    release_large();
    return PyBytes_FromStringAndSize((const char *)digest, 32);
}

static PyMethodDef methods[] = {
    {"digest_json", (PyCFunction)(void (*)(void))digest_json, METH_FASTCALL,
     "digest_json(head: bytes, data: bytes) -> bytes | None\n\nsha256(head + the canonical "
     "form of the JSON value in data); None when data is outside what this reader proves."},
    {"scan_claude_lines", (PyCFunction)(void (*)(void))scan_claude_lines, METH_FASTCALL,
     "scan_claude_lines(data: bytes, number: int) -> list\n\nThe lines of a Claude Code "
     "transcript read for replay (see _claude_scan.h): (number, line) for each the caller "
     "must read, (number, session, turn, model, figures, calls) for each read here."},
    {"scan_event", scan_event, METH_O,
     "scan_event(line: bytes) -> (tool, session, call_id, digest, hash_prefix, session_json, "
     "call_json) | None\n\nAn event line of the common shape, read and hashed; None when "
     "the line is outside what this reader proves (the caller's own path decides)."},
    {"policy_digest", (PyCFunction)(void (*)(void))policy_digest, METH_FASTCALL,
     "policy_digest(line: bytes, head: bytes, names: tuple[bytes, ...]) -> bytes | None\n\n"
     "The digest of scan_event's call without the top-level argument members named; None "
     "when scan_event declines the line."},
    {"sha256", sha256_digest, METH_O,
     "sha256(data) -> bytes\n\nThe digest scan_event uses, for its tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_event_scan",
    "The common event line read, canonicalised and hashed in C (optional; see "
    "fastpath.py).",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__event_scan(void)
{
    PyObject *created = PyModule_Create(&module);
    if (created == NULL)
        return NULL;
    /* LOOP_BRAKE_NO_SHA_NI: the portable compression, whatever the processor has */
    const char *instructions = sha_select(getenv("LOOP_BRAKE_NO_SHA_NI") != NULL);
    int sha_ni = instructions != NULL && strcmp(instructions, "SHA-NI") == 0;
    if (PyModule_AddIntConstant(created, "SHA_NI", sha_ni) < 0 ||
        PyModule_AddStringConstant(created, "SHA_INSTRUCTIONS",
                                   instructions ? instructions : "") < 0) {
        Py_DECREF(created);
        return NULL;
    }
    PyObject *slots = PyType_FromSpec(&slots_type_spec);
    if (slots == NULL || PyModule_AddObject(created, "SessionSlots", slots) < 0) {
        Py_XDECREF(slots);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
