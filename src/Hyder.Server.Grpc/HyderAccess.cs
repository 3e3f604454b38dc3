using System.Collections.Frozen;
using Hyder.Security;
using V1 = Hyder.Api.V1;

namespace Hyder.Server.Grpc;

/// <summary>
/// Which role each method of <c>hyder.v1.Hyder</c> needs: the one place the access rules live.
/// <see cref="HyderInterceptor"/> checks it before any method runs. A method missing here (a new
/// one) is admin-only until it is given a role; writes inside Execute, ExecuteStream and Transact are checked per
/// operation (<see cref="IsWrite"/>).
/// </summary>
public static class HyderAccess
{
    /// <summary>The role each method needs, by its short name in hyder.proto.</summary>
    public static readonly FrozenDictionary<string, ClientRole> Roles = new Dictionary<string, ClientRole>(StringComparer.Ordinal)
    {
        ["Read"] = ClientRole.Reader,
        ["Scan"] = ClientRole.Reader,
        ["Status"] = ClientRole.Reader,
        ["StateHash"] = ClientRole.Reader,

        // A transaction needs the writer role only for its writes (checked per operation).
        ["Execute"] = ClientRole.Reader,
        ["ExecuteStream"] = ClientRole.Reader,
        ["Transact"] = ClientRole.Reader,

        // Operations on the server itself.
        ["Checkpoint"] = ClientRole.Admin,
        ["Trim"] = ClientRole.Admin,
    }.ToFrozenDictionary(StringComparer.Ordinal);

    private static readonly FrozenDictionary<string, ClientRole> s_byFullName = V1.Hyder.Descriptor.Methods.ToFrozenDictionary(
        m => $"/{V1.Hyder.Descriptor.FullName}/{m.Name}",
        m => Roles.GetValueOrDefault(m.Name, ClientRole.Admin),
        StringComparer.Ordinal);

    /// <summary>The least role that may call a method at all; admin for a method of another service or not listed.</summary>
    /// <param name="fullMethodName">The method's full name, <c>/hyder.v1.Hyder/Read</c>.</param>
    /// <returns>The role.</returns>
    public static ClientRole RequiredRole(string fullMethodName) => s_byFullName.GetValueOrDefault(fullMethodName, ClientRole.Admin);

    /// <summary>Whether an operation changes the database (anything but a get or a scan), so it needs the writer role.</summary>
    /// <param name="operation">The operation.</param>
    /// <returns>Whether it writes.</returns>
    public static bool IsWrite(V1.Operation operation)
    {
        ArgumentNullException.ThrowIfNull(operation);
        return operation.Kind is not (V1.OperationKind.Get or V1.OperationKind.Scan);
    }
}
