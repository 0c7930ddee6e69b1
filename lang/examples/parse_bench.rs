use std::time::Instant;
fn main() {
    let block = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "x = a + b * c\n".into())
        .replace("\\n", "\n");
    let mut src = String::new();
    while src.lines().count() < 1000 {
        src.push_str(&block);
    }
    let runs = 20;
    let t = Instant::now();
    for _ in 0..runs {
        let _ = tessera_lang::parse::parse_module(&src, 0);
    }
    println!("{:?} per parse", t.elapsed() / runs);
}
