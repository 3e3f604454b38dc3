using Xunit;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests;

/// <summary>
/// The engine defines the vocabulary (Hyder.Tree's isolation levels and meld's abort causes,
/// Hyder.Server.Engine's operation kinds); hyder.proto and the client repeat every value with the
/// same number and name, so the one mapping at each boundary (Hyder.Server.Grpc's Messages, the
/// client's Wire) cannot drift.
/// </summary>
public sealed class VocabularyParityTests
{
    [Fact]
    public void TheProtoAndTheClientNameEveryCauseMeldCanGive() =>
        AssertParity<Hyder.Tree.Meld.AbortCause, V1.AbortCause, AbortCause>();

    [Fact]
    public void TheProtoAndTheClientNameEveryIsolationLevelOfTheEngine() =>
        AssertParity<Hyder.Tree.IsolationLevel, V1.IsolationLevel, IsolationLevel>();

    [Fact]
    public void TheProtoAndTheClientNameEveryOperationKindOfTheEngine() =>
        AssertParity<Hyder.Server.Engine.OperationKind, V1.OperationKind, HyderOperationKind>();

    /// <summary>Every engine value has the same number and name in the proto and the client, and neither has more.</summary>
    private static void AssertParity<TEngine, TProto, TClient>()
        where TEngine : struct, Enum
        where TProto : struct, Enum
        where TClient : struct, Enum
    {
        var engine = Enum.GetValues<TEngine>().ToDictionary(v => Convert.ToInt32(v, System.Globalization.CultureInfo.InvariantCulture), v => v.ToString());
        foreach (var (number, name) in engine)
        {
            var proto = (TProto)Enum.ToObject(typeof(TProto), number);
            var client = (TClient)Enum.ToObject(typeof(TClient), number);
            Assert.True(Enum.IsDefined(proto), $"hyder.proto has no {typeof(TProto).Name} {number} ({name})");
            Assert.True(Enum.IsDefined(client), $"Hyder.Client has no {typeof(TClient).Name} {number} ({name})");

            // Grpc.Tools spells OPERATION_KIND_OPUT as Oput: names compare without case.
            Assert.Equal(name, proto.ToString(), ignoreCase: true);
            Assert.Equal(name, client.ToString());
        }

        // Nothing beyond the engine's values.
        Assert.DoesNotContain(Enum.GetValues<TClient>(), v => !engine.ContainsKey(Convert.ToInt32(v, System.Globalization.CultureInfo.InvariantCulture)));
        Assert.DoesNotContain(Enum.GetValues<TProto>(), v => !engine.ContainsKey(Convert.ToInt32(v, System.Globalization.CultureInfo.InvariantCulture)));
    }
}
