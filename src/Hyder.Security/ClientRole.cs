namespace Hyder.Security;

/// <summary>
/// What a caller may do, in increasing order: each role may do everything the roles below it may.
/// The Hyder service says which role each method needs (Hyder.Server.Grpc.HyderAccess).
/// </summary>
public enum ClientRole
{
    /// <summary>No access: a caller with this role is refused every call.</summary>
    None = 0,

    /// <summary>Reads: snapshot reads, scans, read-only transactions, status.</summary>
    Reader = 1,

    /// <summary>Reads and writes.</summary>
    Writer = 2,

    /// <summary>Everything, including operations on the server itself (checkpoints, reconfiguration).</summary>
    Admin = 3,
}

/// <summary>Names of <see cref="ClientRole"/> as configuration spells them: none, reader, writer, admin.</summary>
public static class ClientRoles
{
    /// <summary>The accepted names, for messages.</summary>
    public const string Names = "reader, writer or admin";

    /// <summary>Parses reader, writer or admin (case-insensitive); none only when <paramref name="allowNone"/>.</summary>
    /// <param name="text">The name.</param>
    /// <param name="role">The role.</param>
    /// <param name="allowNone">Whether <c>none</c> is accepted.</param>
    /// <returns>Whether the name is a role.</returns>
    public static bool TryParse(string? text, out ClientRole role, bool allowNone = false)
    {
        role = text?.Trim().ToUpperInvariant() switch
        {
            "READER" => ClientRole.Reader,
            "WRITER" => ClientRole.Writer,
            "ADMIN" => ClientRole.Admin,
            "NONE" when allowNone => ClientRole.None,
            _ => (ClientRole)(-1),
        };
        return role >= ClientRole.None;
    }

    /// <summary>The configuration name of a role.</summary>
    /// <param name="role">The role.</param>
    /// <returns>none, reader, writer or admin.</returns>
    public static string Name(ClientRole role) => role switch
    {
        ClientRole.Reader => "reader",
        ClientRole.Writer => "writer",
        ClientRole.Admin => "admin",
        _ => "none",
    };
}
