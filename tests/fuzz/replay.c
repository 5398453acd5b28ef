/* Runs a libFuzzer harness over files without libFuzzer: each argument is a
 * file or a directory of files (tests/fuzz/corpus/H, tests/fuzz/regress/H),
 * each passed once to LLVMFuzzerTestOneInput. Built with the project's
 * compiler for `make check` (tests/fuzz_replay.test): the committed seeds and
 * every crash the fuzzers found stay checked without clang. A harness check
 * that fails aborts. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        perror(path);
        if (f)
            fclose(f);
        return 1;
    }
    rewind(f);
    data = malloc(n > 0 ? (size_t)n : 1);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        free(data);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)n);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int i, bad = 0, files = 0;

    for (i = 1; i < argc; i++) {
        struct stat st;
        DIR *d;
        struct dirent *de;

        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            files++;
            continue;
        }
        if ((d = opendir(argv[i])) == NULL) {
            perror(argv[i]);
            return 1;
        }
        while ((de = readdir(d)) != NULL) {
            char path[4096];

            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            bad |= run_file(path);
            files++;
        }
        closedir(d);
    }
    printf("%d inputs\n", files);
    return bad;
}
