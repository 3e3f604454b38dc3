using Hyder.Rpc.Security;
using Hyder.Testing;
using Xunit;

namespace Hyder.Rpc.Tests.Security;

/// <summary>API keys (bearer tokens) and roles in the server pipeline, over h2c.</summary>
public sealed class AuthenticationTests
{
    private static readonly string s_readerToken = ApiKeyStore.NewToken();
    private static readonly string s_writerToken = ApiKeyStore.NewToken();

    [Fact]
    public async Task ACallWithoutCredentialsIsUnauthenticated()
    {
        await using var t = await StartAsync();
        var e = await Assert.ThrowsAsync<RpcException>(async () => await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }));
        Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
    }

    [Theory]
    [InlineData("authorization", "Bearer hyder_not-a-key")]
    [InlineData("authorization", "Basic dXNlcjpwYXNz")]
    [InlineData("x-api-key", "hyder_not-a-key")]
    public async Task AWrongCredentialIsUnauthenticatedEvenWhereAnonymousCallersAreAllowed(string header, string value)
    {
        await using var t = await StartAsync(anonymous: ClientRole.Admin);
        Assert.Equal("anon", (await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "anon" })).Text);
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }, new CallOptions(Headers: new Metadata { { header, value } })));
        Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
    }

    [Fact]
    public async Task EachRoleMayCallWhatItsRoleAllowsAndNoMore()
    {
        await using var t = await StartAsync();
        using var reader = new RpcChannel(t.Server.Address, new RpcChannelOptions { BearerToken = s_readerToken });
        using var writer = new RpcChannel(t.Server.Address, new RpcChannelOptions { BearerToken = s_writerToken });

        // Count needs reader, Unary writer, Collect admin (see StartAsync).
        Assert.Equal(2, await CountAsync(reader));
        Assert.Equal(2, await CountAsync(writer));
        Assert.Equal("w", (await writer.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "w" })).Text);
        var denied = await Assert.ThrowsAsync<RpcException>(async () => await reader.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "r" }));
        Assert.Equal(StatusCode.PermissionDenied, denied.StatusCode);
        Assert.Equal("reader (reader) may not call /hyder.rpc.test.Echo/Unary: it needs the writer role.", denied.Status.Detail);

        using var collect = writer.ClientStreamingCall(EchoMethods.Collect);
        var admin = await Assert.ThrowsAsync<RpcException>(async () => await collect);
        Assert.Equal(StatusCode.PermissionDenied, admin.StatusCode);
    }

    [Fact]
    public async Task TheXApiKeyHeaderCarriesAKeyToo()
    {
        await using var t = await StartAsync();
        var reply = await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "k" }, new CallOptions(Headers: new Metadata { { "x-api-key", s_writerToken } }));
        Assert.Equal("k", reply.Text);
    }

    [Fact]
    public async Task NoTokenReachesTheLogWhateverHappens()
    {
        var log = new CapturingLoggerFactory();
        await using var t = await StartAsync(loggerFactory: log);
        using var reader = new RpcChannel(t.Server.Address, new RpcChannelOptions { BearerToken = s_readerToken });
        await Assert.ThrowsAsync<RpcException>(async () => await reader.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "r" }));
        var wrong = ApiKeyStore.NewToken();
        await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }, new CallOptions(Headers: new Metadata { { "authorization", "Bearer " + wrong } })));
        await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { FailCode = 13, FailMessage = "boom" }, new CallOptions(Headers: new Metadata { { "x-api-key", s_writerToken } })));

        Assert.Contains("Refused", log.Text, StringComparison.Ordinal);
        foreach (var token in new[] { s_readerToken, s_writerToken, wrong })
        {
            Assert.DoesNotContain(token, log.Text, StringComparison.Ordinal);
            Assert.DoesNotContain(token[ApiKeyStore.TokenPrefix.Length..], log.Text, StringComparison.Ordinal);
        }

        Assert.DoesNotContain(s_readerToken, new RpcChannelOptions { BearerToken = s_readerToken }.ToString()!, StringComparison.Ordinal);
    }

    [Fact]
    public void KeysAreStoredAsHashesAndMatchedByToken()
    {
        var store = new ApiKeyStore();
        var token = ApiKeyStore.NewToken();
        var line = ApiKeyStore.Line("alice", ClientRole.Writer, token);
        Assert.DoesNotContain(token, line, StringComparison.Ordinal);
        Assert.Matches("^alice writer sha256:[0-9a-f]{64}$", line);
        store.AddLine(line);
        store.AddLine(ApiKeyStore.Line("bob", ClientRole.Reader, ApiKeyStore.NewToken()));
        Assert.Equal(new CallerIdentity("alice", ClientRole.Writer, CallerIdentity.ApiKeyScheme), store.Find(token));
        Assert.Null(store.Find(token + "x"));
        Assert.Null(store.Find(string.Empty));
        Assert.NotEqual(token, ApiKeyStore.NewToken());
    }

    [Theory]
    [InlineData("alice writer", "three words")]
    [InlineData("alice owner sha256:0000000000000000000000000000000000000000000000000000000000000000", "not a role")]
    [InlineData("alice none sha256:0000000000000000000000000000000000000000000000000000000000000000", "not a role")]
    [InlineData("alice writer hyder_secret-token-pasted-by-mistake", "not the token itself")]
    [InlineData("al ice writer sha256:00", "three words")]
    [InlineData("a/b writer sha256:0000000000000000000000000000000000000000000000000000000000000000", "letters, digits")]
    public void AMalformedKeyLineIsRefusedWithoutRepeatingTheSecret(string line, string expected)
    {
        var e = Assert.Throws<FormatException>(() => new ApiKeyStore().AddLine(line));
        Assert.Contains(expected, e.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("secret-token", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AKeysFileSkipsCommentsAndNamesTheBadLine()
    {
        using var directory = new TempDirectory("hyder-rpc-keys-");
        var path = Path.Combine(directory.Path, "keys");
        var token = ApiKeyStore.NewToken();
        File.WriteAllLines(path, ["# name role hash", string.Empty, ApiKeyStore.Line("alice", ClientRole.Admin, token)]);
        var store = new ApiKeyStore();
        store.AddFile(path);
        Assert.Equal(ClientRole.Admin, store.Find(token)?.Role);

        File.AppendAllLines(path, [ApiKeyStore.Line("alice", ClientRole.Reader, ApiKeyStore.NewToken())]);
        var e = Assert.Throws<FormatException>(() => new ApiKeyStore().AddFile(path));
        Assert.Contains("line 4", e.Message, StringComparison.Ordinal);
        Assert.Contains("twice", e.Message, StringComparison.Ordinal);
    }

    private static async Task<int> CountAsync(RpcChannel channel)
    {
        using var call = channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Count = 2 });
        var n = 0;
        while (await call.ResponseStream.MoveNext())
        {
            n++;
        }

        return n;
    }

    private static Task<TestServer> StartAsync(ClientRole anonymous = ClientRole.None, Microsoft.Extensions.Logging.ILoggerFactory? loggerFactory = null)
    {
        var keys = new ApiKeyStore();
        keys.AddLine(ApiKeyStore.Line("reader", ClientRole.Reader, s_readerToken));
        keys.AddLine(ApiKeyStore.Line("writer", ClientRole.Writer, s_writerToken));
        return TestServer.StartAsync(o =>
        {
            o.Authenticator = new RpcAuthenticator { ApiKeys = keys, AnonymousRole = anonymous };
            o.RequiredRole = method =>
                method == EchoMethods.Count.FullName ? ClientRole.Reader
                : method == EchoMethods.Unary.FullName ? ClientRole.Writer
                : ClientRole.Admin;
            o.LoggerFactory = loggerFactory;
        });
    }
}
