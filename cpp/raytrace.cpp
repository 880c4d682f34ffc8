#include "raytrace.hpp"
