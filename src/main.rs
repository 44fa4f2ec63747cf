//! The `hookbin` binary: parse flags, set up logging, run. Exit status 2 for bad flags, 1 for
//! failures at start (database, socket), 0 after a clean stop.

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use hookbin::cli::{Cli, Command, LogFormat};
use hookbin::config::Config;
use tracing_subscriber::EnvFilter;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("hookbin: {}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    match &cli.command {
        Some(Command::Forward(args)) => forward(args),
        None | Some(Command::Serve(_)) => {
            let args = cli.serve_args().expect("serve arguments");
            serve(args)
        }
        Some(Command::Healthcheck(args)) => healthcheck(args),
        Some(Command::Send(args)) => send(args),
        Some(Command::Probe(args)) => probe(args),
    }
}

/// clap's error as one line that names the flag: its first paragraph (the message, and for a
/// missing argument the indented lines that name it), without the usage hints that follow.
fn one_line(rendered: &str) -> String {
    let paragraph: Vec<&str> = rendered
        .trim_start()
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let line = paragraph.join(" ");
    match line.trim_start_matches("error: ") {
        "" => "invalid arguments".to_owned(),
        line => line.to_owned(),
    }
}

/// `hookbin send`: one line per attempt on stdout; exit 0 when one got a 2xx, 1 when none did,
/// 2 for bad usage.
fn send(args: &hookbin::cli::SendArgs) -> ExitCode {
    let Some(runtime) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(hookbin::send::send(
        args,
        &mut std::io::stdin(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hookbin send: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `hookbin probe`: the table (or JSON) on stdout; exit 0 when no case failed, 1 otherwise, 2
/// for bad usage.
fn probe(args: &hookbin::cli::ProbeArgs) -> ExitCode {
    use hookbin::send::probe;
    let Some(runtime) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(hookbin::send::probe(args, &mut std::io::stdin())) {
        Ok(report) => {
            if args.json {
                println!("{}", probe::json(&report));
            } else {
                print!("{}", probe::table(&report));
                eprintln!("hookbin probe: {}", probe::summary(&report));
            }
            if report.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("hookbin probe: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Exit 0 when `/healthz` answers 200, 1 when it does not, 2 for a bad flag.
fn healthcheck(args: &hookbin::cli::HealthcheckArgs) -> ExitCode {
    let target = match hookbin::healthcheck::target(args.url.as_deref(), &args.listen) {
        Ok(target) => target,
        Err(e) => {
            eprintln!("hookbin: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(runtime) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(hookbin::healthcheck::check(&target, args.timeout)) {
        Ok(()) => {
            println!("ok: {target}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookbin healthcheck: {target}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `hookbin forward`: replay lines on stdout, everything else on stderr. Ctrl-C (or SIGTERM)
/// stops it between two writes of a line and exits 0.
fn forward(args: &hookbin::cli::ForwardArgs) -> ExitCode {
    let Some(runtime) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    let options = hookbin::forward::Options::from(args);
    let result = runtime.block_on(async {
        let mut stdout = std::io::stdout();
        tokio::select! {
            result = hookbin::forward::run(&options, &mut stdout) => Some(result),
            _ = hookbin::shutdown::os_signal() => None,
        }
    });
    match result {
        None => {
            eprintln!("hookbin forward: stopped");
            ExitCode::SUCCESS
        }
        Some(Ok(())) => ExitCode::SUCCESS,
        Some(Err(e)) => {
            eprintln!("hookbin forward: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn serve(args: &hookbin::cli::ServeArgs) -> ExitCode {
    let config = match Config::try_from(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("hookbin: {e}");
            return ExitCode::from(2);
        }
    };
    init_tracing(config.log_format);
    // Before any thread and any connection (see the function).
    hookbin::storage::sqlite::install_page_cache();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = hookbin::server::main_workers() {
        builder.worker_threads(workers);
    }
    let Some(runtime) = runtime(builder) else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        let addr = config.listen;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| hookbin::RunError::Listen { addr, source })?;
        hookbin::run(listener, config, hookbin::shutdown::os_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("hookbin: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the runtime, or says why not (the caller exits 1).
fn runtime(mut builder: tokio::runtime::Builder) -> Option<tokio::runtime::Runtime> {
    builder
        .enable_all()
        .build()
        .map_err(|e| eprintln!("hookbin: cannot start the async runtime: {e}"))
        .ok()
}

fn init_tracing(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("hookbin=info"));
    // Colours only on a terminal: journald and `docker logs` would keep the escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
