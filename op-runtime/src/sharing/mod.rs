//! Sharing: op cards (source, trust, tolerance, receipts) and a content-addressed store of
//! published cards and kernel sources. (Being built.)
