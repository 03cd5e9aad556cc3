#include "common.h"

double helper_value() { return COMMON_BASE * SCALE; }
