//! Graph IR: what a traced kernel computes (tensor ops with shapes, dtypes, layouts, spans).
