#pragma once
#define COMMON_BASE 100.0
