/* Linked into every libFuzzer harness by scripts/check-fuzz.sh (not into the
 * replay programs): jansson seeds its hash tables from /dev/urandom, which
 * changes the order of object members, so the coverage libFuzzer steers by,
 * from one run to the next. A fixed seed, with a fixed libFuzzer seed and
 * no ASLR, makes `make check-fuzz` try the same inputs every run. */
#include <jansson.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_object_seed(1);
    return 0;
}
