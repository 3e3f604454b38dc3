using Grpc.Core;
using Grpc.Net.Client;
using Hyder.Security;
using Hyder.Server.Grpc;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests.Server;

/// <summary>API keys and roles through HyderInterceptor, and HyderAccess kept in step with hyder.proto.</summary>
public sealed class AccessTests : IAsyncLifetime
{
    private readonly Dictionary<ClientRole, string> _tokens = new()
    {
        [ClientRole.Reader] = ApiKeyStore.NewToken(),
        [ClientRole.Writer] = ApiKeyStore.NewToken(),
        [ClientRole.Admin] = ApiKeyStore.NewToken(),
    };

    private HyderGrpcServer _server = null!;
    private FakeEngine _engine = null!;

    public async Task InitializeAsync()
    {
        var keys = new ApiKeyStore();
        foreach (var (role, token) in _tokens)
        {
            keys.AddLine(ApiKeyStore.Line($"{ClientRoles.Name(role)}-key", role, token));
        }

        _engine = new FakeEngine();
        _server = await HyderGrpcServer.StartAsync(_engine, new GrpcServerOptions { Authenticator = new ClientAuthenticator { ApiKeys = keys } });
    }

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public void EveryMethodOfTheProtoHasItsRoleStatedOnce()
    {
        var methods = V1.Hyder.Descriptor.Methods.Select(m => m.Name).Order().ToArray();
        Assert.Equal(methods, HyderAccess.Roles.Keys.Order().ToArray());
        Assert.Equal(ClientRole.Admin, HyderAccess.RequiredRole("/hyder.v1.Hyder/Checkpoint"));
        Assert.Equal(ClientRole.Reader, HyderAccess.RequiredRole("/hyder.v1.Hyder/Transact"));
        Assert.Equal(ClientRole.Admin, HyderAccess.RequiredRole("/hyder.v1.Hyder/NotYetGivenARole"));
    }

    [Fact]
    public void OnlyGetsAndScansAreReads()
    {
        foreach (var kind in Enum.GetValues<V1.OperationKind>())
        {
            Assert.Equal(kind is not (V1.OperationKind.Get or V1.OperationKind.Scan), HyderAccess.IsWrite(new V1.Operation { Kind = kind }));
        }
    }

    [Theory]
    [InlineData(null, "Status", StatusCode.Unauthenticated)]
    [InlineData("wrong", "Status", StatusCode.Unauthenticated)]
    [InlineData("reader", "Status", StatusCode.OK)]
    [InlineData("reader", "ExecuteRead", StatusCode.OK)]
    [InlineData("reader", "ExecuteWrite", StatusCode.PermissionDenied)]
    [InlineData("reader", "TransactWrite", StatusCode.PermissionDenied)]
    [InlineData("reader", "Checkpoint", StatusCode.PermissionDenied)]
    [InlineData("writer", "ExecuteWrite", StatusCode.OK)]
    [InlineData("writer", "TransactWrite", StatusCode.OK)]
    [InlineData("writer", "Checkpoint", StatusCode.PermissionDenied)]
    [InlineData("admin", "Checkpoint", StatusCode.OK)]
    [InlineData("writer", "Trim", StatusCode.PermissionDenied)]

    // Past the role check: the fake engine has no shared log to trim.
    [InlineData("admin", "Trim", StatusCode.FailedPrecondition)]
    public async Task EachRoleMayCallWhatItsRoleAllowsAndNoMore(string? who, string call, StatusCode expected)
    {
        var token = who switch
        {
            null => null,
            "wrong" => ApiKeyStore.NewToken(),
            _ => _tokens[ClientRoles.TryParse(who, out var role) ? role : ClientRole.None],
        };
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = _server.Address, Token = token, Timeout = TimeSpan.FromSeconds(10) });
        var key = Of($"{who}-{call}");
        Task task = call switch
        {
            "Status" => client.GetStatusAsync(),
            "ExecuteRead" => client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(key)]),
            "ExecuteWrite" => client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(key), HyderOperation.Add(key, 1)]),
            "TransactWrite" => client.ReadWriteAsync(tx => tx.DeleteAsync(key)),
            "Checkpoint" => client.CheckpointAsync(),
            "Trim" => client.TrimAsync(),
            _ => throw new ArgumentOutOfRangeException(nameof(call)),
        };
        var actual = StatusCode.OK;
        try
        {
            await task;
        }
        catch (HyderException e)
        {
            actual = e.StatusCode;
        }

        Assert.Equal(expected, actual);
    }

    [Fact]
    public async Task TheXApiKeyHeaderCarriesAKeyTooAndTwoCredentialsAreRefused()
    {
        using var channel = GrpcChannel.ForAddress(_server.Address);
        var stub = new V1.Hyder.HyderClient(channel);
        var status = await stub.StatusAsync(new V1.StatusRequest(), new Metadata { { "x-api-key", _tokens[ClientRole.Reader] } });
        Assert.Equal("fake-1", status.ServerId);

        var both = new Metadata { { "x-api-key", _tokens[ClientRole.Reader] }, { "authorization", "Bearer " + _tokens[ClientRole.Admin] } };
        var e = await Assert.ThrowsAsync<RpcException>(async () => await stub.StatusAsync(new V1.StatusRequest(), both));
        Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
        Assert.DoesNotContain(_tokens[ClientRole.Admin], e.Status.Detail, StringComparison.Ordinal);
    }
}
