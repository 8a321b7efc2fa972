#include "nn/check.h"
