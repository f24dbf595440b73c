#[test]
fn dbg() {
    let p = std::env::var("DBG_FILE").unwrap();
    let t = std::fs::read_to_string(&p).unwrap();
    let h = cudacheck_core::source::set_aside_host_code(&t).unwrap();
    for f in &h.functions {
        println!(
            "{} {}:{} {:?}",
            f.name, f.location.line, f.location.column, f.decision
        );
    }
    println!("launched {:?}", h.launched);
    println!(
        "unresolved {:?}",
        h.unresolved_launches
            .iter()
            .map(|u| (&u.kernel, u.location.line, &u.depends_on))
            .collect::<Vec<_>>()
    );
    if std::env::var("DBG_TEXT").is_ok() {
        println!("{}", &h.text[h.text_without_launched().len()..]);
    }
}
