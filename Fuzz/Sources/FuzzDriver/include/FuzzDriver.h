#ifndef CUMULUS_FUZZ_DRIVER_H
#define CUMULUS_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, for programs that have their own `main`: parses the
/// command line as libFuzzer does and calls `callback` with each input.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
