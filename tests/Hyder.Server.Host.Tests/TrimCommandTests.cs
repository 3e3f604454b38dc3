using Hyder.Client;
using Hyder.Log;
using Hyder.Log.Embedded;
using Hyder.Log.Storage;
using Hyder.Security;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using Hyder.Testing;
using IsolationLevel = Hyder.Tree.IsolationLevel;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// <c>hyder-server trim</c> (docs/server.md, "Trimming the log") against a server in this process:
/// an embedded log with small segment files, one transaction server, its gRPC API on port 0 with
/// an admin key and a writer key.
/// </summary>
public sealed class TrimCommandTests(ITestOutputHelper output) : IAsyncLifetime
{
    private const int SlotsPerSegment = 64;
    private readonly TempDirectory _data = new("hyder-trim-command-");
    private readonly string _adminToken = ApiKeyStore.NewToken();
    private readonly string _writerToken = ApiKeyStore.NewToken();
    private EmbeddedLog _log = null!;
    private TransactionServer _server = null!;
    private HyderGrpcServer _rpc = null!;

    public async Task InitializeAsync()
    {
        _log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions { DataDirectory = _data.Path, SlotsPerSegment = SlotsPerSegment, Fsync = FsyncPolicy.None });
        var settings = new ClusterSettings { PremeldThreads = 1, Distance = 1, GroupMeld = false, BlockSize = 1024 };
        _server = await TransactionServer.StartAsync(_log, new ServerOptions { ServerId = "trim-host", Cluster = settings, MaxInFlight = 64 });
        var keys = new ApiKeyStore();
        keys.AddLine(ApiKeyStore.Line("ops", ClientRole.Admin, _adminToken));
        keys.AddLine(ApiKeyStore.Line("app", ClientRole.Writer, _writerToken));
        _rpc = await HyderGrpcServer.StartAsync(_server, new GrpcServerOptions { Authenticator = new ClientAuthenticator { ApiKeys = keys } });
    }

    public async Task DisposeAsync()
    {
        await _rpc.DisposeAsync();
        await _server.DisposeAsync();
        await _log.DisposeAsync();
        _data.Dispose();
    }

    private string Connection(string? token) => $"Endpoint={_rpc.Address}" + (token is null ? "" : $";Token={token}");

    private int SegmentFiles() => Directory.GetFiles(_data.Path, "segment-*.log", SearchOption.AllDirectories).Length;

    /// <summary>Fills several segment files, writes a checkpoint and waits until the server's reader has passed it.</summary>
    private async Task<long> LoadAndCheckpointAsync()
    {
        for (var i = 0; i < 4 * SlotsPerSegment; i++)
        {
            var outcome = await _server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(BitConverter.GetBytes(i % 50), BitConverter.GetBytes(i))]);
            Assert.Equal(TransactionStatus.Committed, outcome.Status);
        }

        await _server.CheckpointAsync();
        await _server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put([1], [2])]);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        while (_server.TrimMark(1) is null)
        {
            await Task.Delay(5, timeout.Token);
        }

        return _server.TrimMark(1)!.Value;
    }

    private async Task<(int Code, string Text)> TrimAsync(params string[] args)
    {
        var (code, text) = await ServerProcess.RunAsync(null, ["trim", .. args]);
        output.WriteLine($"hyder-server trim {string.Join(' ', args)} -> {code}: {text}");
        return (code, text);
    }

    /// <summary>An admin's trim removes the segment files below the rule's mark and the reads below it answer Trimmed; a writer's is refused and changes nothing.</summary>
    [Fact]
    public async Task TheAdminTrimRemovesTheSegmentsBelowTheRulesMarkAndAWriterIsDenied()
    {
        var mark = await LoadAndCheckpointAsync();
        Assert.True(mark > 2 * SlotsPerSegment, $"the rule's mark @{mark} leaves no whole segment to remove");
        var segments = SegmentFiles();
        var buffer = new byte[_log.BlockSize];

        var (code, text) = await TrimAsync("--connect", Connection(_writerToken));
        Assert.Equal(1, code);
        Assert.Contains("PERMISSION_DENIED", text, StringComparison.Ordinal);
        Assert.Equal(LogEntryKind.Data, (await _log.ReadAsync(0, buffer)).Kind);
        Assert.Equal(segments, SegmentFiles());

        var tokenFile = Path.Combine(_data.Path, "admin.token");
        await File.WriteAllTextAsync(tokenFile, _adminToken + "\n");
        (code, text) = await TrimAsync("--connect", Connection(null), "--token-file", tokenFile);
        Assert.Equal(0, code);
        Assert.Contains($"trimmed the log below @{mark} ", text, StringComparison.Ordinal);
        Assert.Equal(mark, _server.TrimmedBelow);
        Assert.Equal(LogStatus.Trimmed, (await Assert.ThrowsAsync<SharedLogException>(async () => await _log.ReadAsync(mark - 1, buffer))).Status);
        Assert.Equal(LogEntryKind.Data, (await _log.ReadAsync(mark, buffer)).Kind);
        var left = SegmentFiles();
        Assert.True(left <= segments - (mark / SlotsPerSegment) + 1, $"{left} segment files left of {segments} after trimming below @{mark}");

        // The server still serves, and the same trim again changes nothing.
        Assert.Equal(TransactionStatus.Committed, (await _server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put([3], [4])])).Status);
        (code, text) = await TrimAsync("--connect", Connection(_adminToken));
        Assert.Equal(0, code);
        Assert.Contains($"below @{mark} ", text, StringComparison.Ordinal);
    }

    /// <summary>Bad requests get a reason: a bad --keep or connection string (exit 2), more checkpoints than the server knows (FAILED_PRECONDITION), a negative count over the API (INVALID_ARGUMENT); nothing is trimmed.</summary>
    [Fact]
    public async Task BadTrimRequestsAreRefusedWithAReason()
    {
        var (code, text) = await TrimAsync("--connect", Connection(_adminToken), "--keep", "0");
        Assert.Equal(2, code);
        Assert.Contains("--keep must be at least 1, not 0", text, StringComparison.Ordinal);

        (code, text) = await TrimAsync("--connect", "Endpoint=;Colour=blue");
        Assert.Equal(2, code);
        Assert.Contains("hyder-server trim:", text, StringComparison.Ordinal);

        (code, text) = await TrimAsync("--connect", Connection(_adminToken), "--keep", "3");
        Assert.Equal(1, code);
        Assert.Contains("FAILED_PRECONDITION", text, StringComparison.Ordinal);
        Assert.Contains("knows 0 self-contained checkpoint(s)", text, StringComparison.Ordinal);
        Assert.Contains("write a checkpoint first", text, StringComparison.Ordinal);

        await using var client = new HyderClient(HyderClientSettings.Parse(Connection(_adminToken)));
        var e = await Assert.ThrowsAsync<HyderException>(() => client.TrimAsync(-1));
        Assert.Equal(global::Grpc.Core.StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("keep_checkpoints is -1", e.Message, StringComparison.Ordinal);
        Assert.Equal(0, _server.TrimmedBelow);
    }
}
