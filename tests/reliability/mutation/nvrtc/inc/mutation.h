// Named through the recipe's include directory; NVRTC gets it by content.
#pragma once
#define MUTATION_HEADER 1
