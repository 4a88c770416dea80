/* Checks loop_brake_cli/readers/_sha256.h without Python: reads data on stdin and prints one
 * line per compression, "NAME HEX" for the digest of the whole input fed in uneven
 * pieces, with the portable compression and, where the processor has them, its SHA
 * instructions. Built by tests/test_sha256_paths.py natively and, where a cross
 * compiler and an emulator are installed, for aarch64. */
#include <stdio.h>
#include <stdlib.h>

#include "../../loop_brake_cli/readers/_sha256.h"

static void digest_of(const unsigned char *data, size_t size, const char *name)
{
    Sha256 sha;
    unsigned char digest[32];
    sha_init(&sha);
    size_t piece = 1, done = 0;
    while (done < size) { /* 1, 2, 3, ... bytes at a time: every block boundary */
        size_t take = size - done < piece ? size - done : piece;
        sha_update(&sha, data + done, take);
        done += take;
        piece = piece % 131 + 1;
    }
    sha_final(&sha, digest);
    printf("%s ", name);
    for (int i = 0; i < 32; i++)
        printf("%02x", digest[i]);
    printf("\n");
}

int main(void)
{
    size_t size = 0, room = 1 << 16;
    unsigned char *data = malloc(room);
    size_t got;
    while (data && (got = fread(data + size, 1, room - size, stdin)) > 0) {
        size += got;
        if (size == room)
            data = realloc(data, room *= 2);
    }
    if (data == NULL)
        return 2;
    sha_select(1);
    digest_of(data, size, "portable");
    const char *instructions = sha_select(0);
    if (instructions != NULL)
        digest_of(data, size, instructions);
    free(data);
    return 0;
}
