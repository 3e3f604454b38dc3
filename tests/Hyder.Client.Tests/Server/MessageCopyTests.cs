using System.Runtime.InteropServices;
using Google.Protobuf;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using Xunit;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests.Server;

/// <summary>
/// The service (and the client) hands keys and payloads between the wire and the engine without copying them: a
/// parsed request's bytes go to the engine as they are, an engine's payload goes into the response
/// as it is, and only a field that is not a whole array of its own is copied.
/// </summary>
public sealed class MessageCopyTests
{
    [Fact]
    public void AParsedPutHandsTheEngineTheParsersOwnArrays()
    {
        var wire = new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8("key"), Value = ByteString.CopyFrom(new byte[1024]) }.ToByteArray();
        var parsed = V1.Operation.Parser.ParseFrom(wire);

        var operation = Messages.ToEngine(parsed, new EngineLimits(), "operation");

        Assert.Same(ArrayOf(parsed.Key), operation.Key);
        Assert.Same(ArrayOf(parsed.Value), operation.Value);
        Assert.Equal("key"u8.ToArray(), operation.Key);
        Assert.Equal(1024, operation.Value!.Length);
    }

    [Fact]
    public void AFieldThatIsPartOfALargerArrayIsCopied()
    {
        var buffer = "xxkeyxx"u8.ToArray();
        var operation = new V1.Operation { Kind = V1.OperationKind.Get, Key = UnsafeByteOperations.UnsafeWrap(buffer.AsMemory(2, 3)) };

        var engine = Messages.ToEngine(operation, new EngineLimits(), "operation");

        Assert.NotSame(buffer, engine.Key);
        Assert.Equal("key"u8.ToArray(), engine.Key);
    }

    [Fact]
    public void AResultCarriesTheEnginesPayloadAndRowsWithoutACopy()
    {
        var value = new byte[] { 1, 2, 3 };
        var rowKey = new byte[] { 4 };
        var rowValue = new byte[] { 5, 6 };

        var message = Messages.ToMessage(new OperationResult(true, value, [new(rowKey, rowValue)]));

        Assert.Same(value, ArrayOf(message.Value));
        Assert.Same(rowKey, ArrayOf(message.Rows[0].Key));
        Assert.Same(rowValue, ArrayOf(message.Rows[0].Value));
        Assert.Equal(value, V1.OperationResult.Parser.ParseFrom(message.ToByteArray()).Value.ToByteArray());
    }

    [Fact]
    public void TheClientKeepsAParsedResponsesArraysAndCopiesOnlyPartsOfLargerOnes()
    {
        var wire = new V1.OperationResult { Found = true, Value = ByteString.CopyFromUtf8("value"), Rows = { new V1.Row { Key = ByteString.CopyFromUtf8("k"), Value = ByteString.CopyFromUtf8("v") } } }.ToByteArray();
        var parsed = V1.OperationResult.Parser.ParseFrom(wire);

        var result = Client.Wire.FromMessage(parsed);

        Assert.Same(ArrayOf(parsed.Value), result.Value);
        Assert.Same(ArrayOf(parsed.Rows[0].Key), result.Rows[0].Key);
        Assert.Equal("value"u8.ToArray(), result.Value);
        var buffer = "xxvaluexx"u8.ToArray();
        var part = Client.Wire.Take(UnsafeByteOperations.UnsafeWrap(buffer.AsMemory(2, 5)));
        Assert.NotSame(buffer, part);
        Assert.Equal("value"u8.ToArray(), part);
    }

    [Fact]
    public void TheClientsOneShotRequestRefersToTheCallersArraysAndTheStreamsOperationsAreCopies()
    {
        var key = "key"u8.ToArray();
        var value = new byte[1024];
        var put = HyderOperation.Put(key, value);

        var borrowed = Client.Wire.ToMessage(put, borrow: true);
        var copied = Client.Wire.ToMessage(put);

        // ExecuteAsync tells its caller the arrays must not change until the call completes.
        Assert.Same(key, ArrayOf(borrowed.Key));
        Assert.Same(value, ArrayOf(borrowed.Value));
        Assert.True(borrowed.End.IsEmpty);
        Assert.NotSame(key, ArrayOf(copied.Key));
        Assert.NotSame(value, ArrayOf(copied.Value));
        Assert.Equal(borrowed.ToByteArray(), copied.ToByteArray());
    }

    [Fact]
    public void MappingAValidRequestBuildsNoFieldNames()
    {
        var request = new V1.ExecuteRequest();
        for (var i = 0; i < 10; i++)
        {
            request.Operations.Add(i < 8
                ? new V1.Operation { Kind = V1.OperationKind.Get, Key = ByteString.CopyFromUtf8($"key{i}") }
                : new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8($"key{i}"), Value = ByteString.CopyFrom(new byte[64]) });
        }

        var limits = new EngineLimits();
        Messages.ToEngine(request.Operations, limits); // warm up
        var before = GC.GetAllocatedBytesForCurrentThread();
        var operations = Messages.ToEngine(request.Operations, limits);
        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        var arrayOnly = GC.GetAllocatedBytesForCurrentThread();
        var array = new Operation[operations.Count];
        arrayOnly = GC.GetAllocatedBytesForCurrentThread() - arrayOnly;

        // The engine's operation array and nothing else: a name such as "operations[3].key" is
        // formatted only for a refusal.
        Assert.Equal(10, array.Length);
        Assert.True(allocated <= arrayOnly, $"{allocated} B allocated mapping 10 valid operations; their array alone is {arrayOnly} B");
    }

    [Theory]
    [InlineData("low", -1, null, "low")]
    [InlineData("operation", -1, "value", "operation.value")]
    [InlineData("keys", 1, null, "keys[1]")]
    [InlineData("operations", 3, "key", "operations[3].key")]
    public void AFieldIsNamedAsTheRefusalsAlwaysNamedIt(string name, int index, string? child, string expected)
    {
        var field = new Messages.Field(name, index);
        Assert.Equal(expected, (child is null ? field : field.Member(child)).ToString());
    }

    private static byte[] ArrayOf(ByteString bytes) =>
        MemoryMarshal.TryGetArray(bytes.Memory, out var segment) ? segment.Array! : throw new InvalidOperationException("not backed by an array");
}
