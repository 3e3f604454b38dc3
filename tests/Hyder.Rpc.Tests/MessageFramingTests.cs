using System.IO.Pipelines;
using Google.Protobuf.Reflection;
using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>What MessageFraming does with message bodies the protobuf parser cannot take.</summary>
public sealed class MessageFramingTests
{
    /// <summary>
    /// Google.Protobuf throws IndexOutOfRangeException or ArgumentOutOfRangeException, not
    /// InvalidProtocolBufferException, for a nested length near int.MaxValue
    /// (protocolbuffers/protobuf#26856). Found by the rpc-messages fuzzer (seed 1, cases 818 and 2274).
    /// </summary>
    [Theory]
    [InlineData("2affffffff672acc")] // varint 32, the upstream report's first input
    [InlineData("42fcffffff57d801")] // varint 64
    [InlineData("3affffffff67b534")] // fixed 32
    [InlineData("42ffffffff673934")] // fixed 64
    [InlineData("22ffffffff070a0178")] // a nested message's string runs past the end
    public async Task AMessageWithAnInnerLengthNearIntMaxIsRejectedAsMalformed(string hex)
    {
        var body = Convert.FromHexString(hex);
        var pipe = new Pipe();
        var prefix = new byte[] { 0, 0, 0, 0, (byte)body.Length };
        await pipe.Writer.WriteAsync(prefix);
        await pipe.Writer.WriteAsync(body);
        await pipe.Writer.CompleteAsync();

        var e = await Assert.ThrowsAsync<RpcException>(() =>
            MessageFraming.ReadAsync(pipe.Reader, FileDescriptorProto.Parser, 1024, CancellationToken.None).AsTask());
        Assert.Equal(StatusCode.Internal, e.StatusCode);
        Assert.StartsWith("Failed to deserialize a message", e.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AWellFormedMessageStillParses()
    {
        var pipe = new Pipe();
        MessageFraming.Write(pipe.Writer, new FileDescriptorProto { Name = "a.proto" }, 1024);
        await pipe.Writer.CompleteAsync();
        var message = await MessageFraming.ReadAsync(pipe.Reader, FileDescriptorProto.Parser, 1024, CancellationToken.None);
        Assert.Equal("a.proto", message!.Name);
        Assert.Null(await MessageFraming.ReadAsync(pipe.Reader, FileDescriptorProto.Parser, 1024, CancellationToken.None));
    }
}
