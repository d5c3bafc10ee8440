/* The DSL's hashes, in lower-case hex: md5, sha1, sha256, sha512 and
 * hmac(algorithm, data, key) with sha1, sha256 or sha512 (also written
 * sha-1, ...), through OpenSSL's libcrypto; mmh3, murmur3's 32-bit hash
 * with seed 0 of the value as Go's %v prints it, given as a signed decimal
 * (what favicon hashes compare: mmh3(base64_py(body))); and its one
 * deterministic cipher, aes_cbc(plaintext, key, iv): AES-128, -192 or -256
 * by the key's length, a 16-byte IV, PKCS#7 padding, the raw bytes. */
#include "expr-int.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

static expr_code hex_out(expr_ctx *c, const unsigned char *md, unsigned n, expr_value *out)
{
  char *p = expr__alloc(c, 2u * n);
  if (!p)
    return c->err->code;
  for (unsigned i = 0; i < n; i++) {
    p[2 * i] = "0123456789abcdef"[md[i] >> 4];
    p[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
  }
  *out = expr_str(p, 2u * n);
  return EXPR_OK;
}

/* md5, sha1, sha256, sha512: the mode is the index in digests[]. */
static const EVP_MD *(*const digests[])(void) = {EVP_md5, EVP_sha1, EVP_sha256, EVP_sha512};

static expr_code fn_digest(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  const EVP_MD *md = digests[expr__mode(c)]();
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!EVP_Digest(s.u.str.ptr, s.u.str.len, h, &len, md, NULL))
    return expr__fail(c, EXPR_E_NOMEM, "the hash failed");
  return hex_out(c, h, len, out);
}


static expr_code fn_hmac(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  const EVP_MD *md = expr__is(&a[0], "sha1") || expr__is(&a[0], "sha-1")       ? EVP_sha1()
                     : expr__is(&a[0], "sha256") || expr__is(&a[0], "sha-256") ? EVP_sha256()
                     : expr__is(&a[0], "sha512") || expr__is(&a[0], "sha-512") ? EVP_sha512()
                                                                               : NULL;
  if (!md)
    return expr__fail(c, EXPR_E_VALUE, "hmac: unsupported hash algorithm");
  if (a[1].type != EXPR_STR || a[2].type != EXPR_STR)
    return expr__fail(c, EXPR_E_VALUE, "hmac: the data and the key are strings");
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (a[2].u.str.len > 0x7fffffff ||
      !HMAC(md, a[2].u.str.ptr, (int)a[2].u.str.len, (const unsigned char *)a[1].u.str.ptr,
            a[1].u.str.len, h, &len))
    return expr__fail(c, EXPR_E_NOMEM, "the hmac failed");
  return hex_out(c, h, len, out);
}

static expr_code fn_aes_cbc(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  for (int i = 0; i < 3; i++)
    if (a[i].type != EXPR_STR)
      return expr__fail(c, EXPR_E_VALUE, "aes_cbc: the arguments are strings");
  size_t klen = a[1].u.str.len;
  const EVP_CIPHER *ci = klen == 16 ? EVP_aes_128_cbc()
                         : klen == 24 ? EVP_aes_192_cbc()
                         : klen == 32 ? EVP_aes_256_cbc()
                                      : NULL;
  if (!ci || a[2].u.str.len != 16)
    return expr__fail(c, EXPR_E_VALUE, "aes_cbc: a key of 16, 24 or 32 bytes and an IV of 16");
  size_t len = a[0].u.str.len;
  if (len > c->max_len - 16 || len > INT32_MAX - 16)
    return expr__fail(c, EXPR_E_LIMIT, "aes_cbc: the value would pass %zu bytes", c->max_len);
  char *p = expr__alloc(c, len / 16 * 16 + 16);
  EVP_CIPHER_CTX *x = p ? EVP_CIPHER_CTX_new() : NULL;
  int k1 = 0, k2 = 0;
  int ok = x && EVP_EncryptInit_ex(x, ci, NULL, (const unsigned char *)a[1].u.str.ptr,
                                   (const unsigned char *)a[2].u.str.ptr) &&
           EVP_EncryptUpdate(x, (unsigned char *)p, &k1, (const unsigned char *)a[0].u.str.ptr,
                             (int)len) &&
           EVP_EncryptFinal_ex(x, (unsigned char *)p + k1, &k2);
  EVP_CIPHER_CTX_free(x);
  if (!ok)
    return p ? expr__fail(c, EXPR_E_NOMEM, "aes_cbc failed") : c->err->code;
  *out = expr_str(p, (size_t)(k1 + k2));
  return EXPR_OK;
}

static uint32_t rotl(uint32_t x, int r) { return x << r | x >> (32 - r); }

/* MurmurHash3 x86 32 (Austin Appleby's public-domain design). */
static uint32_t murmur3(const unsigned char *p, size_t n, uint32_t seed)
{
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  uint32_t h = seed, k;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
        (uint32_t)p[i + 3] << 24;
    h ^= rotl(k * c1, 15) * c2;
    h = rotl(h, 13) * 5 + 0xe6546b64;
  }
  k = 0;
  switch (n & 3) {
  case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
  case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
  case 1: k ^= p[i]; h ^= rotl(k * c1, 15) * c2;
  }
  h ^= (uint32_t)n;
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

static expr_code fn_mmh3(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  expr_code rc = expr__str_v(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  uint32_t h = murmur3((const unsigned char *)s.u.str.ptr, s.u.str.len, 0);
  long v = h >= 0x80000000u ? (long)h - 0x100000000L : (long)h;
  char buf[16];
  int len = snprintf(buf, sizeof buf, "%ld", v);
  return expr__copy(c, buf, (size_t)len, out);
}

const expr_fn expr__fn_hashes[] = {
    {"md5", 1, 1, fn_digest, 0},    {"sha1", 1, 1, fn_digest, 1}, {"sha256", 1, 1, fn_digest, 2},
    {"sha512", 1, 1, fn_digest, 3}, {"hmac", 3, 3, fn_hmac, 0},   {"mmh3", 1, 1, fn_mmh3, 0},
    {"aes_cbc", 3, 3, fn_aes_cbc, 0},
    {NULL, 0, 0, NULL, 0},
};
