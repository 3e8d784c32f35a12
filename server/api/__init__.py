"""HTTP: litestar handlers, authentication, error mapping, request bodies and the OpenAPI document."""
