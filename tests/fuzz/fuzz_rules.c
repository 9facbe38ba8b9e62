/* fuzz_rules.c: libFuzzer harness for the rule file loader (rules_from_json_string, rules/).
 *
 * Any bytes must give a validated rule set or one error line, never a crash or undefined
 * behaviour. A set that loads is written back (rules_to_json_string) and must load again to the
 * same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size), err[4096];
    err[0] = '\0';
    rules_set *rs = rules_from_json_string(text, "fuzz.json", err, sizeof err);
    free(text);
    if (!rs) {
        fuzz_check_message(err);
        return 0;
    }
    char *back = rules_to_json_string(rs);
    if (!back)
        fuzz_fail("a loaded rule set cannot be written back", "");
    rules_set *again = rules_from_json_string(back, "back.json", err, sizeof err);
    if (!again)
        fuzz_fail("a written rule set does not load again", err);
    char *back2 = rules_to_json_string(again);
    if (!back2 || strcmp(back, back2))
        fuzz_fail("the round trip changed the rule file", back);
    free(back2);
    free(back);
    rules_set_free(again);
    rules_set_free(rs);
    return 0;
}
