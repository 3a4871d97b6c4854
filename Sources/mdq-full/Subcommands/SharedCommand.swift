import ArgumentParser
import MDQShared

/// `mdq shared`: the shared index across hosts on PostgreSQL, whose schema
/// mdq owns.
struct SharedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shared",
        abstract: "Create, migrate and inspect the shared index across hosts (PostgreSQL).",
        discussion: """
            The shared index is a PostgreSQL 15 database (with the pg_trgm extension) that hosts' \
            system indexes publish into and every user searches. URL is a libpq connection URL, \
            postgresql://USER@HOST:PORT/DATABASE, read as psql reads it: a password may come from \
            ~/.pgpass or PGPASSWORD, and TLS from sslmode=. The database must be encoded in UTF8 \
            with a UTF-8 locale (CREATE DATABASE mdq ENCODING 'UTF8' LOCALE 'C.UTF-8' TEMPLATE \
            template0): under the C locale no name outside ASCII could be found. The schema is \
            described in Documentation/shared-index.md.

            Examples:
              mdq shared init postgresql://mdq@db.example:5432/mdq
              mdq shared migrate postgresql://mdq@db.example/mdq
              mdq shared status postgresql://mdq@db.example/mdq
              mdq shared grant postgresql://mdq@db.example/mdq alice bob
              mdq shared grant --trusted postgresql://mdq@db.example/mdq nas laptop1
              mdq shared grant --publish postgresql://mdq@db.example/mdq host_nas

            Exit status: 0 success, 1 when the database cannot be reached or refuses, 2 usage error.
            """,
        subcommands: [Initialize.self, Migrate.self, Status.self, Grant.self, Revoke.self]
    )

    struct Connection: ParsableArguments {
        @Argument(help: ArgumentHelp("The database, as a postgresql:// URL.", valueName: "url"))
        var url: String

        /// Connects and runs `body` on the database; a failure of either
        /// is said, and ends with status 1.
        func run(_ body: (PostgresConnection) throws -> Void) throws {
            do {
                try body(try PostgresConnection(url: url))
            } catch let error as SharedIndexError {
                Diagnostics.error(error.description)
                throw ExitCode(1)
            }
        }
    }

    /// The schema's state; when the database holds none, says so and ends
    /// with status 1.
    static func existingSchema(in database: PostgresConnection) throws -> SharedSchema.State {
        guard let state = try SharedSchema.state(of: database) else {
            Diagnostics.error("this database holds no shared index: 'mdq shared init' creates it")
            throw ExitCode(1)
        }
        return state
    }

    /// `mdq shared init URL`.
    struct Initialize: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create the shared index's schema in an empty database (or say it is there).")

        @OptionGroup var connection: Connection

        func run() throws {
            try connection.run { database in
                if let state = try SharedSchema.state(of: database) {
                    if let problem = SharedSchema.compatibility(with: state, publishing: false) {
                        Diagnostics.error("the shared index is already there, but " + problem)
                        throw ExitCode(1)
                    }
                    StandardOutput.print("the shared index is already there (schema version \(state.version))")
                    return
                }
                let outcome = try SharedSchema.migrate(database)
                // Another init may have made it meanwhile.
                StandardOutput.print(
                    outcome.from == nil && !outcome.applied.isEmpty
                        ? "created the shared index (schema version \(outcome.to))"
                        : "the shared index is already there (schema version \(outcome.to))")
            }
        }
    }

    /// `mdq shared migrate URL`.
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the shared index's schema forward to this mdq's version, one step at a time.")

        @OptionGroup var connection: Connection

        func run() throws {
            try connection.run { database in
                _ = try SharedCommand.existingSchema(in: database)
                let outcome = try SharedSchema.migrate(database)
                if outcome.applied.isEmpty {
                    StandardOutput.print("the shared index is up to date (schema version \(outcome.to))")
                } else {
                    StandardOutput.print(
                        "migrated the shared index from schema version \(outcome.from ?? 0) to \(outcome.to)")
                }
            }
        }
    }

    /// `mdq shared status URL`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the shared index's schema version, who may use it, and its hosts.")

        @OptionGroup var connection: Connection

        func run() throws {
            try connection.run { database in
                let state = try SharedCommand.existingSchema(in: database)
                var lines = [
                    "schema version: \(state.version) (this mdq: \(SharedSchema.current))",
                    "publishers must know version \(state.minimumPublisher) or later, readers \(state.minimumReader)",
                    "name folding: version \(state.foldVersion)",
                    "hosts: \(state.hosts)",
                ]
                for publishing in [true, false] {
                    let role = publishing ? "publish" : "search"
                    lines.append(
                        SharedSchema.compatibility(with: state, publishing: publishing).map {
                            "this mdq may not \(role): \($0)"
                        } ?? "this mdq may \(role)")
                }
                StandardOutput.print(lines.joined(separator: "\n"))
            }
        }
    }

    /// `mdq shared grant URL ROLE...`.
    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let database roles search the shared index.",
            discussion: """
                A role granted this calls the schema's search functions and nothing else, and is judged as \
                the user of its own name on each host: give each user a role of their name, with their \
                own credential, and a machine they are root on still shows them only what they may see. \
                With --trusted, a role may also read every table and searches as whichever user it \
                names: for hosts that trust each other's system index, and administrators. With --publish, \
                a role may publish the host it registers (mdq system run --publish with its URL), and \
                write nothing of any other host.
                """)

        @OptionGroup var connection: Connection

        @Argument(help: ArgumentHelp("Roles (they must exist: CREATE ROLE alice LOGIN).", valueName: "role"))
        var roles: [String]

        @Flag(help: "Also read every table, and search as any user named.")
        var trusted = false

        @Flag(help: "Publish one host (the first it registers), and search as itself; nothing of other hosts.")
        var publish = false

        func validate() throws {
            guard !(trusted && publish) else {
                throw ValidationError("--trusted and --publish are two roles' rights: grant them to different roles")
            }
        }

        func run() throws {
            try connection.run { database in
                _ = try SharedCommand.existingSchema(in: database)
                let access: SharedSchema.Access = publish ? .publish : trusted ? .trusted : .search
                for role in roles {
                    try SharedSchema.grant(database, role: role, access: access)
                    switch access {
                    case .search: StandardOutput.print("\(role) may search the shared index as the user \(role)")
                    case .trusted: StandardOutput.print("\(role) may read the shared index and search it as any user")
                    case .publish:
                        StandardOutput.print(
                            "\(role) may publish one host into the shared index (the one it registers), and search it "
                                + "as the user \(role)")
                    }
                }
            }
        }
    }

    /// `mdq shared revoke URL ROLE...`.
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take back what 'mdq shared grant' gave database roles.")

        @OptionGroup var connection: Connection

        @Argument(help: ArgumentHelp("Roles.", valueName: "role"))
        var roles: [String]

        func run() throws {
            try connection.run { database in
                _ = try SharedCommand.existingSchema(in: database)
                for role in roles {
                    try SharedSchema.revoke(database, role: role)
                    StandardOutput.print("\(role) may no longer read or search the shared index")
                }
            }
        }
    }
}
