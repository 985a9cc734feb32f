//! A throwaway PostgreSQL server for tests and benchmarks (being written).
