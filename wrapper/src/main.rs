//! `iai-mcp-wrapper` binary: everything it does is the library's
//! ([`iai_mcp_wrapper::entry`]).

fn main() -> std::process::ExitCode {
    iai_mcp_wrapper::entry::run()
}
