//! Reed-Solomon encode and decode throughput for MPLOT's block shapes
//! (paper 002 §III-B, eq 12: packets of 750, 550 or 250 bytes, at least 5
//! per block). Throughput is counted in data bytes per block; the target is
//! at least 1 Gbit/s (125 MB/s) on one core for both directions.
//!
//! `cargo bench -p braid-core --bench fec`

use braid_core::fec::BlockCode;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// (packet bytes, data packets k, parity packets m).
const SHAPES: &[(usize, usize, usize)] = &[
    (750, 5, 2),
    (750, 20, 5),
    (750, 50, 10),
    (550, 20, 5),
    (250, 20, 5),
    (750, 100, 40),
];

fn data(k: usize, len: usize) -> Vec<Vec<u8>> {
    (0..k)
        .map(|i| (0..len).map(|j| (i * 7 + j * 13) as u8).collect())
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("rs");
    for &(len, k, m) in SHAPES {
        let code = BlockCode::new(k, m).unwrap();
        let block = data(k, len);
        let parity = code.encode(&block).unwrap();
        let id = format!("{len}B_k{k}_m{m}");
        g.throughput(Throughput::Bytes((len * k) as u64));
        g.bench_function(BenchmarkId::new("encode", &id), |b| {
            b.iter(|| code.encode(std::hint::black_box(&block)).unwrap())
        });
        // Decode with the worst case: the first m data packets lost.
        g.bench_function(BenchmarkId::new("decode", &id), |b| {
            b.iter(|| {
                let mut shards: Vec<Option<Vec<u8>>> = block
                    .iter()
                    .cloned()
                    .chain(parity.iter().cloned())
                    .enumerate()
                    .map(|(i, s)| (i >= m).then_some(s))
                    .collect();
                code.reconstruct(&mut shards).unwrap();
                shards
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
