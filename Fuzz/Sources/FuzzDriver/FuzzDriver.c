// The declaration in include/FuzzDriver.h is all this target provides;
// libFuzzer itself is linked by `-sanitize=fuzzer`.
#include "FuzzDriver.h"
