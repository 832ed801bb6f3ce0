/* hash_variants.c -- XXH3_64bits of Debian's libxxhash-dev with one vector loop, compiled once per
 * instruction set by CMakeLists.txt: -DMT_HASH_VARIANT=scalar|avx2|avx512 (and -mavx2 or
 * -mavx512f). hash.c chooses among them at run time. */
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#define MT_HASH_scalar 0
#define MT_HASH_avx2 2
#define MT_HASH_avx512 3
#define MT_CAT_(a, b) a##b
#define MT_CAT(a, b) MT_CAT_(a, b)
#define XXH_VECTOR MT_CAT(MT_HASH_, MT_HASH_VARIANT)
#include <xxhash.h>

uint64_t MT_CAT(mt_xxh3_64_, MT_HASH_VARIANT)(const void *data, size_t n);
uint64_t MT_CAT(mt_xxh3_64_, MT_HASH_VARIANT)(const void *data, size_t n) { return XXH3_64bits(data, n); }
