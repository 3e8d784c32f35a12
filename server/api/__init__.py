"""HTTP: litestar handlers, authentication, error mapping and stream responses."""
