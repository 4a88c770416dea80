/* SHA-256 (FIPS 180-4) for the C event reader (_event_scan.c), with the processor's
 * instructions where it has them: x86 SHA-NI, ARMv8 SHA-2. Plain C with no Python, so
 * tests/sha256_harness.c checks every compression, also built for another processor
 * and run under an emulator (tests/test_sha256_paths.py). */
#ifndef LOOP_BRAKE_SHA256_H
#define LOOP_BRAKE_SHA256_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__)) &&                   \
    (defined(__linux__) || defined(__APPLE__))
#include <arm_neon.h>
#define HAVE_ARM_SHA2 1
#if defined(__ARM_FEATURE_SHA2) || defined(__ARM_FEATURE_CRYPTO)
#define ARM_SHA2_TARGET
#else
#define ARM_SHA2_TARGET __attribute__((target("+crypto")))
#endif

/* The same compression with the ARMv8 SHA-2 instructions (FEAT_SHA256), used when
 * the processor has them (checked once at import). The state stays (A, B, C, D) and
 * (E, F, G, H): SHA256H and SHA256H2 take it in that order; SHA256SU0/SU1 extend the
 * schedule four words at a time. */
ARM_SHA2_TARGET static void sha_compress_arm(uint32_t *state, const unsigned char *block)
{
    uint32x4_t abcd = vld1q_u32(&state[0]), efgh = vld1q_u32(&state[4]);
    const uint32x4_t abcd_in = abcd, efgh_in = efgh;
    uint32x4_t w[4];
    for (int i = 0; i < 4; i++)
        w[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(block + 16 * i)));
    for (int i = 0; i < 16; i++) {
        if (i >= 4) /* the oldest four words become W[4i..4i+3] */
            w[i & 3] = vsha256su1q_u32(vsha256su0q_u32(w[i & 3], w[(i + 1) & 3]),
                                       w[(i + 2) & 3], w[(i + 3) & 3]);
        uint32x4_t message = vaddq_u32(w[i & 3], vld1q_u32(&SHA_K[4 * i]));
        uint32x4_t before = abcd;
        abcd = vsha256hq_u32(abcd, efgh, message);
        efgh = vsha256h2q_u32(efgh, before, message);
    }
    vst1q_u32(&state[0], vaddq_u32(abcd, abcd_in));
    vst1q_u32(&state[4], vaddq_u32(efgh, efgh_in));
}

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)
#endif
static int has_arm_sha2(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
}
#else /* every Apple arm64 processor has them */
static int has_arm_sha2(void)
{
    return 1;
}
#endif
#endif

/* The compression in use: the portable one, or the processor's (sha_select). */
static void (*compress)(uint32_t *, const unsigned char *) = sha_compress;

/* Use the processor's SHA-256 instructions where it has them, unless ``portable``:
 * their name ("SHA-NI", "ARMv8 SHA-2"), or NULL for the portable compression. */
static const char *sha_select(int portable)
{
    compress = sha_compress;
    if (portable)
        return NULL;
#ifdef HAVE_SHA_NI
    if (has_sha_ni()) {
        compress = sha_compress_ni;
        return "SHA-NI";
    }
#endif
#ifdef HAVE_ARM_SHA2
    if (has_arm_sha2()) {
        compress = sha_compress_arm;
        return "ARMv8 SHA-2";
    }
#endif
    return NULL;
}

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

#endif
