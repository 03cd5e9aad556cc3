// Reached only through an include directory (-I inc): keyed by the compiler's depfile.
#pragma once
#define MUTATION_HEADER 1
