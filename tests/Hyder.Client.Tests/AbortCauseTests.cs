using Xunit;

namespace Hyder.Client.Tests;

/// <summary>Every cause meld can abort with has the same number and name in hyder.proto and in the client.</summary>
public sealed class AbortCauseTests
{
    [Fact]
    public void TheProtoAndTheClientNameEveryCauseMeldCanGive()
    {
        foreach (var cause in Enum.GetValues<Hyder.Tree.Meld.AbortCause>())
        {
            var number = (int)cause;
            var proto = (Hyder.Api.V1.AbortCause)number;
            var client = (AbortCause)number;
            Assert.True(Enum.IsDefined(proto), $"hyder.proto has no AbortCause {number} ({cause})");
            Assert.True(Enum.IsDefined(client), $"Hyder.Client has no AbortCause {number} ({cause})");
            Assert.Equal(cause.ToString(), client.ToString());
            Assert.Equal(cause.ToString(), proto.ToString());
        }
    }
}
