using Hyder.Api.V1;
using Hyder.Rpc.Security;

namespace Hyder.Api;

/// <summary>
/// Which role each method of <c>hyder.v1.Hyder</c> needs: the one place the access rules live.
/// Reader: Read, Scan, Status, StateHash, and Execute / Transact whose operations only read.
/// Writer: also Execute / Transact with a put or delete (<see cref="IsWrite"/>). Admin: the
/// <see cref="AdminMethods"/>, and any method not listed here (a new method is admin-only until
/// it is given a role).
/// </summary>
public static class HyderAccess
{
    /// <summary>
    /// Operations on the server itself, for admins only: Checkpoint today; reconfiguration, trim and
    /// state dumps join this list when the API gets them.
    /// </summary>
    public static readonly IReadOnlySet<string> AdminMethods = new HashSet<string>(StringComparer.Ordinal)
    {
        HyderMethods.Checkpoint.FullName,
    };

    private static readonly IReadOnlySet<string> s_readerMethods = new HashSet<string>(StringComparer.Ordinal)
    {
        HyderMethods.Read.FullName,
        HyderMethods.Scan.FullName,
        HyderMethods.Status.FullName,
        HyderMethods.StateHash.FullName,

        // A transaction needs the writer role only for its writes (checked per operation).
        HyderMethods.Execute.FullName,
        HyderMethods.Transact.FullName,
    };

    /// <summary>The least role that may call a method at all.</summary>
    /// <param name="fullMethodName">The method's full name, <c>/hyder.v1.Hyder/Read</c>.</param>
    /// <returns>The role.</returns>
    public static ClientRole RequiredRole(string fullMethodName) =>
        s_readerMethods.Contains(fullMethodName) ? ClientRole.Reader : ClientRole.Admin;

    /// <summary>Whether an operation changes the database (anything but a get or a scan), so it needs the writer role.</summary>
    /// <param name="operation">The operation.</param>
    /// <returns>Whether it writes.</returns>
    public static bool IsWrite(Operation operation)
    {
        ArgumentNullException.ThrowIfNull(operation);
        return operation.Kind is not (OperationKind.Get or OperationKind.Scan);
    }
}
