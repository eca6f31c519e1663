#[no_mangle] pub extern "C" fn f() -> u32 { 1 }
