/* The drafter's cheaper products: int4 weights, and its vocabulary choice. */
#include "kernels.h"
