"""The IR layer: tilefuse's dialects, structured-op views, affine helpers, the context
and located diagnostics. It imports only xDSL."""
