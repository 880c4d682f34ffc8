// Sequential ray tracing through rotationally symmetric surfaces (filled in by the thick-eye work).
#pragma once
