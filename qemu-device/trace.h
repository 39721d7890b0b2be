#include "hw/vrnic/trace-hw_vrnic.h"
