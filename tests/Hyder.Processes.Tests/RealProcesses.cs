using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>The real-process tests run one class at a time: each starts a whole cluster, and two at once would starve each other on a small machine.</summary>
[CollectionDefinition(Name)]
public sealed class RealProcesses
{
    public const string Name = "real processes";
}
