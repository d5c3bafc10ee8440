/* Result codes: their messages, from the one table in respchain.h. */
#include "respchain.h"

const char *rc_strerror(rc_code code)
{
  switch (code) {
#define RC__MESSAGE(name, value, msg)                                                              \
  case name: return msg;
    RC_CODES(RC__MESSAGE)
#undef RC__MESSAGE
  }
  return "unknown result code";
}

const char *rc_result_text(rc_code code, CURLcode curlcode)
{
  return code == RC_E_TRANSFER ? curl_easy_strerror(curlcode) : rc_strerror(code);
}
