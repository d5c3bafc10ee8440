/* The expression engine's function library, by name: one table per group
 * (expr-func-*.c). The DSL registers every function also under its name
 * without underscores (tolower for to_lower, base64decode), as nuclei's
 * older templates write them; expr__fn_find accepts both.
 *
 *   strings   len to_lower to_upper to_title to_string reverse sort uniq
 *             repeat replace trim trim_left trim_right trim_space
 *             trim_prefix trim_suffix contains contains_all contains_any
 *             starts_with ends_with line_starts_with line_ends_with
 *             equals_any concat join split index substr remove_bad_chars
 *             count padding print_debug
 *   codings   base64 base64_py base64_decode url_encode url_decode
 *             hex_encode hex_decode html_escape html_unescape xor
 *   hashes    md5 sha1 sha256 sha512 hmac mmh3 aes_cbc aes_gcm rsa_encrypt
 *   numbers   to_number to_bool dec_to_hex hex_to_dec oct_to_dec bin_to_dec
 *   time      date_time unix_time to_unix_time wait_for
 *   versions  compare_versions
 *   regex     regex regex_all regex_any replace_regex
 *   zlib      gzip gzip_decode gzip_mtime zlib zlib_decode deflate inflate zip
 *   random    rand_base rand_char rand_text_alpha rand_text_alphanumeric
 *             rand_text_numeric rand_int rand_ip
 *   json      json_minify json_prettify
 *   jwt       generate_jwt (HMAC and none)
 *
 * Left out, each an unknown function: what reaches the network or a
 * service (public_ip, jarm, llm_prompt), what needs large data sets
 * (wappalyzer's fingerprints, cookie_unsign's word list,
 * generate_java_gadget and generate_dotnet_gadget's serialized payloads),
 * and two whose exact rules were not settled: unpack (Python struct
 * formats through gostruct) and ip_format (mapcidr's eleven notations). */
#include "expr-int.h"

#include <string.h>

static const expr_fn *const tables[] = {
    expr__fn_strings, expr__fn_codings,  expr__fn_hashes, expr__fn_numbers,
    expr__fn_time,    expr__fn_versions, expr__fn_regex,  expr__fn_zlib,
    expr__fn_random,  expr__fn_json,     expr__fn_jwt,
};

/* Whether name[0..len) is fn's name with its underscores left out. */
static int squeezed(const char *fn, const char *name, size_t len)
{
  size_t i = 0;
  for (; *fn; fn++) {
    if (*fn == '_')
      continue;
    if (i == len || name[i++] != *fn)
      return 0;
  }
  return i == len;
}

const expr_fn *expr__fn_find(const char *name, size_t len)
{
  for (int pass = 0; pass < 2; pass++)
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
      for (const expr_fn *f = tables[t]; f->name; f++)
        if (pass == 0 ? strlen(f->name) == len && memcmp(f->name, name, len) == 0
                      : squeezed(f->name, name, len))
          return f;
  return NULL;
}
