/* The DSL's generate_jwt(json, algorithm, [key]): a JSON Web Token whose
 * claims are the JSON object written as Go marshals it (json_minify), its
 * header {"alg":...,"typ":"JWT"}, both in unpadded base64url, signed with
 * HMAC for HS256, HS384 and HS512 (the key is the third argument), or
 * unsigned for "" and "none" in any case (the header then names the
 * algorithm as written, "" as none). The DSL's other algorithms need
 * private keys and its fourth argument (a max age) reads the clock: those
 * are refused. */
#include "expr-int.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <strings.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

static void b64url(sbuf *b, const unsigned char *p, size_t n)
{
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (size_t i = 0; i < n && b->rc == EXPR_OK; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
    sb_add(b, q, n - i >= 3 ? 4 : n - i + 1);
  }
}

/* Whether s, trimmed, is "none" in any case. */
static int is_none(const expr_value *s)
{
  const char *p = s->u.str.ptr;
  size_t n = s->u.str.len;
  while (n && (*p == ' ' || *p == '\t'))
    p++, n--;
  while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
    n--;
  return n == 4 && strncasecmp(p, "none", 4) == 0;
}

static expr_code fn_generate_jwt(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value claims, alg = a[1], key = n > 2 ? a[2] : expr_str("", 0);
  if (n > 3)
    return expr__fail(c, EXPR_E_VALUE, "generate_jwt: a max age is not supported");
  if (alg.type != EXPR_STR || key.type != EXPR_STR)
    return expr__fail(c, EXPR_E_VALUE, "generate_jwt: the algorithm and key are strings");
  static const char *const names[] = {"HS256", "HS384", "HS512"};
  const EVP_MD *md = NULL;
  const char *name = NULL;
  for (int i = 0; i < 3 && !md; i++)
    if (alg.u.str.len == 5 && strncasecmp(alg.u.str.ptr, names[i], 5) == 0) {
      name = names[i];
      md = i == 0 ? EVP_sha256() : i == 1 ? EVP_sha384() : EVP_sha512();
    }
  int none = alg.u.str.len == 0 || is_none(&alg);
  if (!md && !none)
    return expr__fail(c, EXPR_E_VALUE, "generate_jwt: unsupported algorithm");
  expr_code rc = expr__json_minify(c, &a[0], &claims);
  if (rc != EXPR_OK)
    return rc;
  sbuf h, b;
  sb_init(&h, c);
  sb_add(&h, "{\"alg\":\"", 8);
  if (md)
    sb_add(&h, name, 5);
  else if (alg.u.str.len)
    sb_add(&h, S(alg));
  else
    sb_add(&h, "none", 4);
  sb_add(&h, "\",\"typ\":\"JWT\"}", 14);
  expr_value header;
  if ((rc = sb_done(&h, &header)) != EXPR_OK)
    return rc;
  sb_init(&b, c);
  b64url(&b, (const unsigned char *)header.u.str.ptr, header.u.str.len);
  sb_addc(&b, '.');
  b64url(&b, (const unsigned char *)claims.u.str.ptr, claims.u.str.len);
  unsigned char sig[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (md && b.rc == EXPR_OK &&
      (key.u.str.len > 0x7fffffff ||
       !HMAC(md, key.u.str.ptr, (int)key.u.str.len, (const unsigned char *)sb_ptr(&b), b.len, sig,
             &len)))
    b.rc = expr__fail(c, EXPR_E_NOMEM, "the hmac failed");
  sb_addc(&b, '.');
  b64url(&b, sig, len);
  return sb_done(&b, out);
}

const expr_fn expr__fn_jwt[] = {
    {"generate_jwt", 2, 4, fn_generate_jwt, 0},
    {NULL, 0, 0, NULL, 0},
};
