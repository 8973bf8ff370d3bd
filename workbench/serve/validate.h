// Up-front checks of a serving run (serve/validate.cpp).
#pragma once
#include "serve/cluster.h"

namespace lpu::serve {

void validate_serving(const RequestList& requests, const ClusterConfig& config);

}  // namespace lpu::serve
