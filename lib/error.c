/* Result codes: their messages, from the one table in respchain.h. */
#include "respchain.h"

const char *rc_strerror(rc_code code)
{
  switch (code) {
#define RC__MESSAGE(name, value, msg) case name: return msg;
    RC_CODES(RC__MESSAGE)
#undef RC__MESSAGE
  }
  return "unknown result code";
}
