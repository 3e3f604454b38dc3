using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree;
using Xunit;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// The engine's request checks run on every transaction a client sends: a request that passes
/// them costs no allocation, and a refusal still names the operation it is about.
/// </summary>
public sealed class RequestChecksTests
{
    private static readonly EngineLimits s_limits = new();

    private static Operation[] MainJob() =>
    [
        .. Enumerable.Range(0, 8).Select(i => Operation.Get([(byte)'k', (byte)i])),
        Operation.Put([(byte)'k', 8], new byte[64]),
        Operation.Put([(byte)'k', 9], new byte[64]),
    ];

    [Fact]
    public void CheckingAValidTransactionAllocatesNothing()
    {
        var operations = MainJob();
        RequestChecks.Validate(IsolationLevel.Serializable, operations, s_limits); // warm up

        var before = GC.GetAllocatedBytesForCurrentThread();
        RequestChecks.Validate(IsolationLevel.Serializable, operations, s_limits);
        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal(0, allocated);
    }

    [Fact]
    public void ARefusalNamesTheOperationItIsAbout()
    {
        var operations = MainJob();
        operations[9] = Operation.Put([], new byte[64]);

        var e = Assert.Throws<EngineException>(() => RequestChecks.Validate(IsolationLevel.Serializable, operations, s_limits));

        Assert.Equal(EngineErrorCode.InvalidArgument, e.Code);
        Assert.Equal("operation 9: a key must not be empty", e.Message);
    }
}
