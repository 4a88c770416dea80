/* loop_brake_cli._event_scan: the common event line, read, canonicalised and hashed in C.
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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_DIGITS 15 /* JavaScript prints up to 15 significant digits as written */

/* ---- SHA-256 (FIPS 180-4) ---------------------------------------------------- */

typedef struct {
    uint32_t state[8];
    unsigned char block[64];
    size_t used;    /* bytes in block */
    uint64_t total; /* bytes hashed */
} Sha256;

static const uint32_t SHA_INIT[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

static const uint32_t SHA_K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u,
    0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u,
    0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au,
    0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_compress(uint32_t *state, const unsigned char *block)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = ((uint32_t)block[4 * i] << 24) | ((uint32_t)block[4 * i + 1] << 16) |
               ((uint32_t)block[4 * i + 2] << 8) | (uint32_t)block[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) +
                      SHA_K[i] + w[i];
        uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHA_NI 1

/* The same compression with the x86 SHA extensions (Intel's SHA-NI), used when the
 * processor has them (``sha_ni``, checked once at import). The state is kept as the
 * instructions want it: (A, B, E, F) and (C, D, G, H). */
__attribute__((target("sha,sse4.1,ssse3"))) static void sha_compress_ni(uint32_t *state,
                                                                     const unsigned char *block)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int i = 0; i < 16; i++) {
        __m128i words;
        if (i < 4)
            words = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(block + 16 * i)), swap);
        else {
            /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a time */
            words = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
            words = _mm_add_epi32(words, _mm_alignr_epi8(w[(i - 1) & 3], w[(i - 2) & 3], 4));
            words = _mm_sha256msg2_epu32(words, w[(i - 1) & 3]);
        }
        w[i & 3] = words;
        __m128i message = _mm_add_epi32(words, _mm_loadu_si128((const __m128i *)&SHA_K[4 * i]));
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, message);
        message = _mm_shuffle_epi32(message, 0x0E);
        abef = _mm_sha256rnds2_epu32(abef, cdgh, message);
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}

static int has_sha_ni(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    int sse = (ecx & bit_SSSE3) && (ecx & bit_SSE4_1);
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return 0;
    return sse && (ebx & bit_SHA);
}
#endif

/* The compression in use: the portable one, or SHA-NI's (set at import). */
static void (*compress)(uint32_t *, const unsigned char *) = sha_compress;

static void sha_init(Sha256 *sha)
{
    memcpy(sha->state, SHA_INIT, sizeof SHA_INIT);
    sha->used = 0;
    sha->total = 0;
}

static void sha_update(Sha256 *sha, const unsigned char *data, size_t size)
{
    sha->total += size;
    if (sha->used) {
        size_t take = 64 - sha->used;
        if (take > size)
            take = size;
        memcpy(sha->block + sha->used, data, take);
        sha->used += take;
        data += take;
        size -= take;
        if (sha->used < 64)
            return;
        compress(sha->state, sha->block);
        sha->used = 0;
    }
    while (size >= 64) {
        compress(sha->state, data);
        data += 64;
        size -= 64;
    }
    memcpy(sha->block, data, size);
    sha->used = size;
}

static void sha_final(Sha256 *sha, unsigned char *digest)
{
    uint64_t bits = sha->total * 8;
    sha->block[sha->used++] = 0x80;
    if (sha->used > 56) {
        memset(sha->block + sha->used, 0, 64 - sha->used);
        compress(sha->state, sha->block);
        sha->used = 0;
    }
    memset(sha->block + sha->used, 0, 56 - sha->used);
    for (int i = 0; i < 8; i++)
        sha->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    compress(sha->state, sha->block);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (unsigned char)(sha->state[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(sha->state[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(sha->state[i] >> 8);
        digest[4 * i + 3] = (unsigned char)sha->state[i];
    }
}

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

/* A string at r->p (on its opening quote), written to the output as JSON.stringify
 * writes it. ``plain``: no escape at all (names and the event's id strings);
 * ``ascii``: printable ASCII only (object member names, so that byte order is UTF-16
 * order). The escapes JSON.stringify writes itself are kept as they are; \/ and \u
 * are rewritten (unicode_escape), so the output never outgrows the input. */
static int string(Reader *r, int plain, int ascii)
{
    const unsigned char *copied = r->p++; /* the input before it is in out_buf already */
    while (r->p < r->end) {
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

static PyMethodDef methods[] = {
    {"digest_json", (PyCFunction)(void (*)(void))digest_json, METH_FASTCALL,
     "digest_json(head: bytes, data: bytes) -> bytes | None\n\nsha256(head + the canonical "
     "form of the JSON value in data); None when data is outside what this reader proves."},
    {"scan_event", scan_event, METH_O,
     "scan_event(line: bytes) -> (tool, session, call_id, digest, hash_prefix, session_json, "
     "call_json) | None\n\nAn event line of the common shape, read and hashed; None when "
     "the line is outside what this reader proves (the caller's own path decides)."},
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
    int sha_ni = 0;
#ifdef HAVE_SHA_NI
    if (has_sha_ni() && getenv("LOOP_BRAKE_NO_SHA_NI") == NULL) {
        compress = sha_compress_ni;
        sha_ni = 1;
    }
#endif
    if (PyModule_AddIntConstant(created, "SHA_NI", sha_ni) < 0) {
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
